import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** A span as an OTLP/HTTP JSON export carries it, with the service.name of its resource. */
export type ReceivedSpan = {
  readonly service: string;
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, unknown>>;
};

export type OtlpReceiver = AsyncDisposable & {
  /** What services get as OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  readonly spans: readonly ReceivedSpan[];
};

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: KeyValue[];
      }[];
    }[];
  }[];
};

/**
 * A tiny OTLP/HTTP trace receiver on loopback (POST /v1/traces, JSON encoding, as
 * @opentelemetry/exporter-trace-otlp-http sends it): the services export to it as to a collector.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      try {
        const raw = Buffer.concat(chunks);
        const body = JSON.parse(
          (request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8'),
        ) as ExportRequest;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(
            valueOf(resourceSpans.resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value),
          );
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                service,
                name: span.name,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                kind: span.kind ?? 0,
                attributes: Object.fromEntries(
                  (span.attributes ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]),
                ),
              });
            }
          }
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (error) {
        process.stderr.write(`OTLP receiver: ${(error as Error).message}\n`);
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: (error as Error).message }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function valueOf(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
