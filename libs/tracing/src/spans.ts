import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { formatTraceparent, isPropagated, parseTraceparent, TRACEPARENT_HEADER } from './traceparent.js';
import { tracingEnabled } from './tracing-state.js';

export { SpanKind };
export type { Attributes, Span };

const TRACER_NAME = 'flotilla';

/** Something with NATS-style headers (MsgHdrs: `get` answers '' for a missing header). */
export type HeaderReader = { get(name: string): string };

export type SpanOptions = {
  readonly attributes?: Attributes;
  readonly kind?: SpanKind;
  /**
   * The parent: a `traceparent` value (the one of the commit a service reacts to), or the
   * headers holding it. Absent or invalid: the span is a child of the active span, or a root.
   */
  readonly parent?: string | HeaderReader | undefined;
};

/**
 * Runs `work` inside a new span (active for everything it awaits, appends included, so their
 * commits carry it), ends it when `work` settles and records a thrown error. With tracing off,
 * calls `work(undefined)` and nothing else.
 */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return work(undefined);
  const parent = parentContext(options.parent);
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) },
    parent,
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** A span started and ended apart (a request's, from one hook to another). */
export type OpenSpan = {
  readonly span: Span;
  /** Runs `work` with the span active (what it calls, and what they await, are its children). */
  enter<T>(work: () => T): T;
  /** Ends the span; `failed` marks it an error. */
  end(failed?: string): void;
};

/** Starts a span to end later; undefined with tracing off. */
export function startSpan(name: string, options: SpanOptions): OpenSpan | undefined {
  if (!tracingEnabled()) return undefined;
  const parent = parentContext(options.parent);
  const span = trace
    .getTracer(TRACER_NAME)
    .startSpan(
      name,
      { kind: options.kind ?? SpanKind.INTERNAL, ...(options.attributes ? { attributes: options.attributes } : {}) },
      parent,
    );
  const active = trace.setSpan(parent, span);
  return {
    span,
    enter: (work) => context.with(active, work),
    end(failed) {
      if (failed !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failed });
      span.end();
    },
  };
}

/** Marks a span as failed without an exception (an outcome the code handles, e.g. a tool's error). */
export function markFailed(span: Span | undefined, message: string): void {
  span?.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** The `traceparent` of the active span, for a commit's headers; undefined with tracing off or outside a span. */
export function activeTraceparent(): string | undefined {
  if (!tracingEnabled()) return undefined;
  const spanContext = trace.getSpanContext(context.active());
  return isPropagated(spanContext) ? formatTraceparent(spanContext) : undefined;
}

function parentContext(parent: SpanOptions['parent']): Context {
  if (parent === undefined) return context.active();
  const value = typeof parent === 'string' ? parent : parent.get(TRACEPARENT_HEADER);
  const spanContext = parseTraceparent(value);
  // a commit without a (valid) trace context starts a trace of its own, not a child of whatever is active
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}
