import type { EventLog } from '@flotilla/log';
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { ConversationIndex } from './conversation-index.js';
import { openApiHtml } from './openapi.js';

export type OpsRoutesOptions = {
  readonly openapi: Record<string, unknown>;
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly index: ConversationIndex;
  readonly registry: Registry;
  /** Serve the web UI at `/` (FLOTILLA_GATEWAY_WEB_UI). */
  readonly webUi: boolean;
};

/** The routes outside the API's table: docs, health, readiness, metrics, and the web UI when it is on. */
export async function registerOpsRoutes(app: FastifyInstance, options: OpsRoutesOptions): Promise<void> {
  const { openapi, registry } = options;
  app.get('/docs/openapi.json', async () => openapi);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(openApiHtml(openapi)));
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    const ready = await isReady(options);
    return reply.code(ready ? 200 : 503).send({ ready, nats: !options.nc.isClosed(), index: options.index.ready });
  });
  app.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
  if (options.webUi) {
    const { registerWebUi } = await import('./web-ui.js');
    await registerWebUi(app);
  }
}

async function isReady(deps: Pick<OpsRoutesOptions, 'nc' | 'log' | 'index'>): Promise<boolean> {
  if (deps.nc.isClosed() || !deps.index.ready) return false;
  return deps.log.jsm.streams.info(deps.log.streamName).then(
    () => true,
    () => false,
  );
}
