import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { startTracing } from '../start-tracing.js';

export type { ReadableSpan };

export type SpanRecorder = AsyncDisposable & {
  /** The spans ended so far, in the order they ended. */
  spans(): readonly ReadableSpan[];
  reset(): void;
};

/** Turns tracing on in this process with the SDK's InMemorySpanExporter (a test's `await using`). */
export async function recordSpans(service = 'test'): Promise<SpanRecorder> {
  const exporter = new InMemorySpanExporter();
  const tracing = await startTracing({ service, exporter });
  return {
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    async [Symbol.asyncDispose]() {
      await tracing.shutdown();
      exporter.reset();
    },
  };
}
