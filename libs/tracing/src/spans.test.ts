import { describe, expect, it } from 'vitest';
import { recordSpans } from './testing/index.js';
import { activeTraceparent, formatTraceparent, inSpan, parseTraceparent, tracingEnabled } from './index.js';

const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('traceparent', () => {
  it('parses a valid value and formats it back', () => {
    const context = parseTraceparent(PARENT);
    expect(context).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
    });
    expect(formatTraceparent(context!)).toBe(PARENT);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['upper case', PARENT.toUpperCase()],
    ['version ff', `ff${PARENT.slice(2)}`],
    ['zero trace id', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`],
    ['zero span id', `00-0af7651916cd43dd8448eb211c80319c-${'0'.repeat(16)}-01`],
    ['short', PARENT.slice(0, 54)],
    ['extra field', `${PARENT}-00`],
    ['not hex', PARENT.replace('0af7', 'zzzz')],
  ])('ignores a malformed value (%s)', (_name, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('inSpan', () => {
  it('does nothing but the work with tracing off', async () => {
    expect(tracingEnabled()).toBe(false);
    const seen = await inSpan('off', { parent: PARENT }, async (span) => ({ span, traceparent: activeTraceparent() }));
    expect(seen).toEqual({ span: undefined, traceparent: undefined });
  });

  it('makes a child of the traceparent it is given, active across awaits, and records failures', async () => {
    await using recorder = await recordSpans();
    let inner: string | undefined;
    await inSpan('outer', { parent: PARENT, attributes: { 'flotilla.tenant': 'acme' } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await inSpan('inner', {}, async () => {
        await Promise.resolve();
        inner = activeTraceparent();
      });
    });
    await expect(inSpan('failing', {}, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    const [innerSpan, outer, failing] = recorder.spans();
    expect(outer?.name).toBe('outer');
    expect(outer?.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(outer?.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(outer?.attributes['flotilla.tenant']).toBe('acme');
    expect(innerSpan?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId);
    expect(inner).toBe(formatTraceparent(innerSpan!.spanContext()));
    expect(failing?.status.code).toBe(2);
    expect(failing?.events[0]?.name).toBe('exception');
    expect(failing?.spanContext().traceId).not.toBe(outer?.spanContext().traceId);
  });

  it('starts a new trace for a commit with no (or a malformed) trace context', async () => {
    await using recorder = await recordSpans();
    await inSpan('parent', {}, () =>
      inSpan('from-bad-header', { parent: { get: () => 'garbage' } }, async () => undefined),
    );
    const [child, parent] = recorder.spans();
    expect(child?.parentSpanContext).toBeUndefined();
    expect(child?.spanContext().traceId).not.toBe(parent?.spanContext().traceId);
  });
});
