import { context, trace } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { setTracingEnabled, tracingEnabled } from './tracing-state.js';

export type TracingOptions = {
  /** service.name of every span (the service: gateway, step-worker, …). */
  readonly service: string;
  /** service.instance.id. */
  readonly instance?: string;
  /** OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT): spans go to `<endpoint>/v1/traces`, batched. */
  readonly endpoint?: string;
  /** Instead of OTLP: an exporter of the caller's (tests: an InMemorySpanExporter), fed span by span. */
  readonly exporter?: SpanExporter;
};

export type Tracing = {
  /** Exports what is buffered (a batch not yet sent). */
  flush(): Promise<void>;
  /** Exports what is buffered and turns tracing off again. */
  shutdown(): Promise<void>;
};

/**
 * Turns tracing on for this process: an SDK tracer provider (loaded here, only now), spans kept
 * across awaits (AsyncLocalStorage), exported over OTLP/HTTP in batches or to the given exporter.
 * One per process: a second call while on is refused.
 */
export async function startTracing(options: TracingOptions): Promise<Tracing> {
  if (tracingEnabled()) throw new Error('tracing is already on in this process');
  if (options.endpoint === undefined && options.exporter === undefined)
    throw new Error('startTracing needs an OTLP endpoint or an exporter');
  const [sdk, { AsyncLocalStorageContextManager }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
  ]);
  const processor = options.exporter
    ? new sdk.SimpleSpanProcessor({ exporter: options.exporter })
    : new sdk.BatchSpanProcessor({ exporter: await otlpExporter(options.endpoint!), scheduledDelayMillis: 500 });
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({
      'service.name': options.service,
      ...(options.instance ? { 'service.instance.id': options.instance } : {}),
    }),
    // a commit's trace context decides for its children: a sampled parent, a recorded span
    sampler: new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    spanProcessors: [processor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  setTracingEnabled(true);
  return {
    flush: () => provider.forceFlush(),
    async shutdown() {
      setTracingEnabled(false);
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

async function otlpExporter(endpoint: string): Promise<SpanExporter> {
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  return new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
}
