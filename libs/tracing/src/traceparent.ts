import { trace, TraceFlags, type SpanContext } from '@opentelemetry/api';

/** The W3C Trace Context header a commit carries (optional): the span that appended it. */
export const TRACEPARENT_HEADER = 'traceparent';

// version-traceid-parentid-flags, lowercase hex (https://www.w3.org/TR/trace-context/#traceparent-header)
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The span context a `traceparent` value names, or undefined when it is absent or malformed
 * (anyone may append a header: a bad one is ignored, it never fails the commit it rides on).
 * Version ff and all-zero ids are invalid, as the recommendation says.
 */
export function parseTraceparent(value: string | undefined | null): SpanContext | undefined {
  if (!value || value.length !== 55) return undefined;
  const match = TRACEPARENT.exec(value);
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match as unknown as [string, string, string, string, string];
  if (version === 'ff' || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The `traceparent` value of a span context (version 00). */
export function formatTraceparent(context: SpanContext): string {
  const flags = (context.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/** Whether a span context is one to propagate (the API's no-op spans carry an invalid one). */
export function isPropagated(context: SpanContext | undefined): context is SpanContext {
  return context !== undefined && trace.isSpanContextValid(context);
}
