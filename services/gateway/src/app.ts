import fastifyWebsocket from '@fastify/websocket';
import Fastify, { type FastifyInstance } from 'fastify';
import type { GatewayConfig } from './config.js';
import { fileRoutes } from './file-routes.js';
import type { GatewayDependencies } from './gateway-dependencies.js';
import { startGatewayServices } from './gateway-services.js';
import { answerFrameworkError, registerErrorHandlers } from './http-errors.js';
import { openApiDocument } from './openapi.js';
import { registerAgentEndpoints } from './reach/agent-endpoints.js';
import { registerOpsRoutes } from './ops-routes.js';
import { registerAccessControl, registerRequestTracing } from './request-hooks.js';
import { registerBodyParsers, registerTableRoutes } from './route-registration.js';
import type { Access, RouteSpec } from './route-table.js';
import { restRoutes } from './routes.js';
import type { SecretService } from './secret-service.js';
import { serverInfoOf } from './server-info.js';
import { SocketConnections } from './socket-connections.js';
import type { SocketHub } from './socket-hub.js';
import { WorkspaceService } from './workspace-service.js';

export type Gateway = {
  readonly app: FastifyInstance;
  readonly hub: SocketHub;
  readonly openapi: Record<string, unknown>;
  readonly routes: readonly RouteSpec[];
  /** Secrets of conversations and tenants; `removeConversationSecrets` is the hook for deleting a conversation. */
  readonly secrets: SecretService;
  /** Close every socket (1001: reconnect elsewhere) and the HTTP server. */
  close(): Promise<void>;
};

declare module 'fastify' {
  interface FastifyRequest {
    tenant: string;
  }
  interface FastifyContextConfig {
    access?: Access;
    /** The route reads its body's bytes itself (an upload). */
    rawBody?: boolean;
  }
}

/**
 * Builds the gateway's fastify app: REST, the event WebSocket, docs, health and metrics. The
 * services behind them are wired in gateway-services, the hooks every request passes in
 * request-hooks, the event WebSocket in socket-connections.
 */
export async function buildGateway(deps: GatewayDependencies, config: GatewayConfig): Promise<Gateway> {
  const { log, logger } = deps;
  const services = await startGatewayServices(deps, config);
  const { conversations, secrets, webhooks, schedules, sandboxes, hub, limiter, metrics, scheduleRunner } = services;

  const app = Fastify({
    bodyLimit: config.maxBodyBytes,
    logger: false,
    return503OnClosing: true,
    forceCloseConnections: true,
    // room for the longest valid event id (128); longer parameters get a 400 below
    routerOptions: { maxParamLength: 256 },
    // errors fastify raises before routing (bad percent-escapes, over-long parameters) get the API's error body
    frameworkErrors: answerFrameworkError,
  });
  await app.register(fastifyWebsocket, { options: { maxPayload: config.maxFrameBytes } });
  app.decorateRequest('tenant', '');

  const serverInfo = serverInfoOf(deps, config, secrets, sandboxes);
  const files = new WorkspaceService(deps.nc, deps.runners, log, { maxFileBytes: config.maxFileBytes }, logger);
  const routes = [
    ...restRoutes({
      nc: deps.nc,
      conversations,
      index: deps.index,
      keys: deps.keys,
      secrets,
      webhooks,
      schedules,
      serverInfo,
      ...(deps.usage ? { usage: deps.usage } : {}),
    }),
    ...fileRoutes(files),
  ];
  const openapi = openApiDocument(routes, { version: deps.version });

  // errors: always `{ error: { code, message } }`, never a 5xx for bad input
  registerErrorHandlers(app, logger);
  // every request gets its span, then its key checked and rate limited (and is counted in the metrics)
  registerRequestTracing(app);
  const refusedUpgrades = registerAccessControl(app, {
    keys: deps.keys,
    limiter,
    metrics,
    adminKey: config.adminKey,
  });
  registerBodyParsers(app);

  const sockets = new SocketConnections({
    config,
    keys: deps.keys,
    limiter,
    refusedUpgrades,
    hub,
    log,
    index: deps.index,
    conversations,
    secrets,
    logger,
  });
  registerTableRoutes(app, routes, {
    maxBodyBytes: config.maxBodyBytes,
    openSocket: (socket, request) => sockets.open(socket, request),
  });
  await registerOpsRoutes(app, {
    openapi,
    nc: deps.nc,
    log,
    index: deps.index,
    registry: metrics.registry,
    webUi: config.webUi,
  });

  await registerAgentEndpoints(app, config.agentEndpoints, { version: deps.version, logger, catalog: deps.catalog });

  await scheduleRunner?.start(deps.nc);

  return {
    app,
    hub,
    openapi,
    routes,
    secrets,
    async close() {
      sockets.closeAll();
      await services.stop();
      await app.close();
    },
  };
}
