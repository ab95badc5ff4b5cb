export { activeTraceparent, inSpan, markFailed, SpanKind, startSpan } from './spans.js';
export type { Attributes, HeaderReader, OpenSpan, Span, SpanOptions } from './spans.js';
export { startTracing } from './start-tracing.js';
export type { Tracing, TracingOptions } from './start-tracing.js';
export { formatTraceparent, parseTraceparent, TRACEPARENT_HEADER } from './traceparent.js';
export { tracingEnabled } from './tracing-state.js';
