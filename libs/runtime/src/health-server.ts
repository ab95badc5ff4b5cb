import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceMetrics } from './metrics.js';

export type HealthChecks = {
  /** Resolves true when the service can do its work (NATS and its streams reachable). */
  ready(): Promise<boolean>;
};

export type HealthServer = AsyncDisposable & { readonly port: number; readonly url: string };

/** GET /health (alive), /ready (503 until ready), /metrics (Prometheus text). */
export async function startHealthServer(
  port: number,
  checks: HealthChecks,
  metrics: Pick<ServiceMetrics, 'registry'>,
  host = '127.0.0.1',
): Promise<HealthServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const reply = (status: number, body: string, type = 'application/json'): void => {
      response.writeHead(status, { 'content-type': type });
      response.end(body);
    };
    if (request.method !== 'GET') return reply(405, JSON.stringify({ error: 'method_not_allowed' }));
    if (path === '/health') return reply(200, JSON.stringify({ status: 'ok' }));
    if (path === '/ready') {
      checks.ready().then(
        (ready) => reply(ready ? 200 : 503, JSON.stringify({ ready })),
        () => reply(503, JSON.stringify({ ready: false })),
      );
      return;
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => reply(200, text, metrics.registry.contentType),
        (error: Error) => reply(500, JSON.stringify({ error: error.message })),
      );
      return;
    }
    reply(404, JSON.stringify({ error: 'not_found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}`,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
