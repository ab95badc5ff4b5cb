import {
  API_KEY_HEADER,
  CloseCode,
  MAX_MESSAGE_BODY_BYTES,
  MAX_MESSAGE_IMAGE_BYTES,
  SocketQuery,
  type ServerInfo,
} from '@flotilla/api';
import type { AgentCatalog } from '@flotilla/agent';
import {
  ConversationId,
  CURRENT_PROTOCOL_VERSION,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_MESSAGE,
  STORED_IMAGE_MEDIA_TYPES,
} from '@flotilla/events';
import type { EventLog } from '@flotilla/log';
import { requestWorkspaceDeletion, type DeletionNotice, type RunnerRegistry } from '@flotilla/runtime';
import type { ScheduleStore } from '@flotilla/schedules';
import type { SecretWriter } from '@flotilla/secrets';
import type { SnapshotStore } from '@flotilla/state';
import { SpanKind, startSpan } from '@flotilla/tracing';
import fastifyWebsocket from '@fastify/websocket';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { WebSocket } from 'ws';
import type { ZodError } from 'zod';
import { ApiError, validationError } from './api-error.js';
import { hashApiKey, sameKey, type ApiKeyStore } from './api-keys.js';
import type { GatewayConfig } from './config.js';
import type { ConversationIndex } from './conversation-index.js';
import { ConversationService } from './conversation-service.js';
import { openApiDocument, openApiHtml } from './openapi.js';
import { RateLimiter } from './rate-limiter.js';
import type { Access, RouteSpec } from './route-table.js';
import { restRoutes } from './routes.js';
import { RetentionSweeper, webhookAnnouncer, type ExpiryAnnouncer } from './retention.js';
import { SandboxSummary } from './sandbox-summary.js';
import { SecretService } from './secret-service.js';
import { fileRoutes } from './file-routes.js';
import { WorkspaceService } from './workspace-service.js';
import { WebhookService, type WebhookStores } from './webhook-service.js';
import { ScheduleRunner } from './schedule-runner.js';
import { ScheduleService } from './schedule-service.js';
import { SocketHub } from './socket-hub.js';
import { SocketSession } from './socket-session.js';
import type { ImageWriter } from './message-images.js';
import type { RunQueue } from './run-queue.js';
import type { TenantBudgets, TenantUsageStore } from '@flotilla/runtime';
import { RunStarter } from './run-starter.js';

export type GatewayDependencies = {
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly snapshots: SnapshotStore;
  readonly index: ConversationIndex;
  readonly keys: ApiKeyStore;
  readonly logger: Logger;
  readonly instance: string;
  readonly version: string;
  /** The tools a spec may offer here (the catalog's), with what they do. */
  readonly tools: readonly { name: string; description: string }[];
  /** The operator's agents (default spec, templates, profiles, limits): every conversation's spec is made from it. */
  readonly catalog: AgentCatalog;
  /** The secrets' writing side (it never reads a value back); undefined when the gateway has no secrets key (the secrets routes answer 503). */
  readonly secrets?: SecretWriter;
  /** The tool runners: deleting a conversation removes its workspace through them; server info describes their sandboxes. */
  readonly runners?: RunnerRegistry;
  /** Where the images of user messages are stored (written, never read back); without it a message with images is answered 503. */
  readonly images?: ImageWriter;
  /** The webhooks' registrations and dead letters; undefined without a secrets key (the webhooks routes answer 503). */
  readonly webhooks?: WebhookStores;
  /** The schedules' stream and bucket; undefined on a nats-server without message schedules (the schedules routes answer 503). */
  readonly schedules?: ScheduleStore;
  /** The tenants' usage and budgets (FLOTILLA_TENANT_BUDGETS) for the operator's usage route; without it the route says nothing is counted. */
  readonly usage?: { readonly store: TenantUsageStore; readonly budgets: TenantBudgets };
  /** Where runs past the tenant's limit wait (with FLOTILLA_MAX_RUNNING_PER_TENANT); without it they are refused with 429. */
  readonly runQueue?: RunQueue;
  /** Where each deleted conversation is announced, once its log is purged (the deletion notices' queue, for the PostgreSQL sink). */
  readonly deletions?: (notice: DeletionNotice) => Promise<void>;
};

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

const SOCKET_PING_MS = 30_000;

/** Builds the gateway's fastify app: REST, the event WebSocket, docs, health and metrics. */
export async function buildGateway(deps: GatewayDependencies, config: GatewayConfig): Promise<Gateway> {
  const { log, logger } = deps;
  const conversations = new ConversationService(
    deps.nc,
    log,
    deps.snapshots,
    deps.index,
    {
      maxRunning: config.maxRunning,
      maxRunningPerTenant: config.maxRunningPerTenant,
      maxQueuedMessages: config.maxQueuedMessages,
      ...(deps.runQueue && config.maxRunningPerTenant > 0 ? { runQueue: deps.runQueue } : {}),
    },
    deps.catalog,
    deps.images,
  );
  // conversations idle past their retention are announced to their tenant's webhooks (where there are any), then deleted
  const announce: ExpiryAnnouncer = deps.webhooks
    ? webhookAnnouncer(deps.webhooks.registry, jetstream(deps.nc))
    : async () => undefined;
  const retention = new RetentionSweeper(deps.index, conversations, config.retention, announce, logger);
  retention.start(config.retentionSweepMs);
  // queued runs start here as their tenant's slots free up (on every gateway: claims decide which)
  const starter =
    deps.runQueue && config.maxRunningPerTenant > 0
      ? new RunStarter({
          queue: deps.runQueue,
          index: deps.index,
          limit: config.maxRunningPerTenant,
          start: (ref) => conversations.startQueued(ref),
          holder: deps.instance,
          logger,
        })
      : undefined;
  starter?.start();
  const secrets = new SecretService(deps.secrets, conversations, logger);
  const webhooks = new WebhookService(deps.webhooks, log, logger);
  const schedules = new ScheduleService(
    deps.schedules,
    conversations,
    deps.catalog,
    { minIntervalSeconds: config.scheduleMinIntervalSeconds },
    logger,
  );
  const runners = deps.runners;
  if (runners) {
    conversations.onDelete(async (ref, workspace) => {
      if (!(await requestWorkspaceDeletion(deps.nc, runners, ref, undefined, workspace)))
        logger.warn(
          { conversation: ref.conversation, tenant: ref.tenant },
          'no tool runner confirmed removing the workspace of a deleted conversation',
        );
    });
  }
  conversations.onDelete((ref) => secrets.removeConversationSecrets(ref));
  // the PostgreSQL sink keeps or drops its rows of a deleted conversation when it reads the notice
  if (deps.deletions) conversations.onDeleted(deps.deletions);
  const sandboxes = new SandboxSummary(runners, logger);
  await sandboxes.refresh();
  const hub = new SocketHub(deps.nc, log, logger, config.maxSubscribersPerConversation);
  const limiter = new RateLimiter(config.rateLimitPerSecond);
  const metrics = gatewayMetrics(hub);
  // every gateway takes schedules' runs (one shared consumer: each run reaches one gateway)
  const scheduleRunner = deps.schedules
    ? new ScheduleRunner(deps.schedules, conversations, logger, config.scheduleMissedRunGraceMs, (outcome) =>
        metrics.scheduleRuns.inc({ outcome }),
      )
    : undefined;

  const app = Fastify({
    bodyLimit: config.maxBodyBytes,
    logger: false,
    return503OnClosing: true,
    forceCloseConnections: true,
    // room for the longest valid event id (128); longer parameters get a 400 below
    routerOptions: { maxParamLength: 256 },
    // errors fastify raises before routing (bad percent-escapes, over-long parameters) get the API's error body
    frameworkErrors: (error, _request, reply) => {
      const api =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new ApiError(400, 'validation_failed', 'A path parameter is longer than any valid id.')
          : error.code === 'FST_ERR_BAD_URL'
            ? new ApiError(400, 'validation_failed', 'The path is not a valid URL (a malformed percent-escape).')
            : toApiError(error);
      void (reply as unknown as FastifyReply).code(api.statusCode).send(api.body());
    },
  });
  await app.register(fastifyWebsocket, { options: { maxPayload: config.maxFrameBytes } });
  app.decorateRequest('tenant', '');

  const serverInfo = (tenant: string): ServerInfo => ({
    name: 'flotilla-gateway',
    version: deps.version,
    protocol_version: CURRENT_PROTOCOL_VERSION,
    api_version: 'v1',
    instance: deps.instance,
    tenant,
    tools: [...deps.tools],
    agents: agentsInfo(deps.catalog),
    capabilities: {
      websocket: true,
      token_streaming: true,
      confirmation: true,
      condensation: true,
      event_search: true,
      secrets: secrets.available,
    },
    sandbox: sandboxes.current,
    limits: {
      max_body_bytes: config.maxBodyBytes,
      max_frame_bytes: config.maxFrameBytes,
      max_subscribers_per_conversation: config.maxSubscribersPerConversation,
      max_running: config.maxRunning,
      max_running_per_tenant: config.maxRunningPerTenant,
      images: {
        max_image_bytes: MAX_IMAGE_BYTES,
        max_images_per_message: MAX_IMAGES_PER_MESSAGE,
        max_message_image_bytes: MAX_MESSAGE_IMAGE_BYTES,
        max_message_body_bytes: MAX_MESSAGE_BODY_BYTES,
        media_types: [...STORED_IMAGE_MEDIA_TYPES],
      },
    },
  });
  const files = new WorkspaceService(deps.nc, runners, log, { maxFileBytes: config.maxFileBytes }, logger);
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

  // ── errors: always `{ error: { code, message } }`, never a 5xx for bad input ─────────────
  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    const api = toApiError(error);
    // the gateway's own 5xx answers (unavailable, secrets_not_configured) are expected; anything else is logged
    if (api.statusCode >= 500 && !(error instanceof ApiError))
      logger.error({ err: error, url: request.url, method: request.method }, 'request failed');
    if (api.retryAfterSeconds !== undefined) void reply.header('retry-after', String(api.retryAfterSeconds));
    void reply.code(api.statusCode).send(api.body());
  });
  app.setNotFoundHandler((request, reply) => {
    void reply
      .code(404)
      .send(new ApiError(404, 'route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`).body());
  });

  // ── traces: a span per request (tracing on: OTEL_EXPORTER_OTLP_ENDPOINT), active for its handler,
  // so the commits it appends carry it; a client's valid traceparent header is its parent ───────
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    // a WebSocket lives for hours: its frames are no request's span
    const traced = isUpgrade(request)
      ? undefined
      : startSpan(`${request.method} ${route}`, {
          kind: SpanKind.SERVER,
          parent: typeof request.headers.traceparent === 'string' ? request.headers.traceparent : '',
          attributes: { 'http.request.method': request.method, 'http.route': route },
        });
    if (!traced) return done();
    reply.raw.once('close', () => {
      traced.span.setAttributes({
        'http.response.status_code': reply.statusCode,
        ...(request.tenant ? { 'flotilla.tenant': request.tenant } : {}),
      });
      traced.end(reply.statusCode >= 500 ? `status ${reply.statusCode}` : undefined);
    });
    traced.enter(done);
  });

  // ── authentication and rate limiting ────────────────────────────────────────────────────
  // A socket's key refused in its header: the upgrade goes through and the socket is closed with
  // 4001 and the reason (a browser sees close codes, never an upgrade's HTTP status).
  const refusedUpgrades = new WeakMap<FastifyRequest, string>();
  app.addHook('onRequest', async (request, reply) => {
    const started = performance.now();
    reply.raw.once('finish', () => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.requests.inc({ route, method: request.method, status: String(reply.statusCode) });
      metrics.latency.observe({ route, method: request.method }, (performance.now() - started) / 1_000);
    });
    const access = request.routeOptions.config?.access ?? 'public';
    if (access === 'public') return;
    const key = presentedKey(request);
    if (!key) {
      if (isUpgrade(request)) return; // the socket may authenticate with its first frame
      throw new ApiError(
        401,
        'unauthorized',
        `Send an API key as "Authorization: Bearer <key>" or "${API_KEY_HEADER}: <key>".`,
      );
    }
    const refuse = (error: ApiError): void => {
      if (!isUpgrade(request)) throw error;
      refusedUpgrades.set(request, error.statusCode === 429 ? 'rate limited: retry later' : 'the API key is not valid');
    };
    const wait = limiter.take(hashApiKey(key));
    if (wait > 0)
      return refuse(
        new ApiError(429, 'rate_limited', 'Too many requests for this API key.', undefined, Math.ceil(wait / 1_000)),
      );
    if (access === 'admin') {
      if (!config.adminKey || !sameKey(key, config.adminKey))
        throw new ApiError(403, 'forbidden', 'This route needs the admin key.');
      return;
    }
    const record = await deps.keys.resolve(key);
    if (!record) return refuse(new ApiError(401, 'unauthorized', 'The API key is not valid.'));
    request.tenant = record.tenant;
  });

  // the API takes JSON: fastify's own text/plain parser would hand a route a string to refuse as 400
  app.removeContentTypeParser('text/plain');
  // a route that takes raw bytes (an upload) reads the body's stream itself, bounded by its own limit; elsewhere bytes are refused like any body that is not JSON
  app.addContentTypeParser('application/octet-stream', (request, payload, done) => {
    if (request.routeOptions.config?.rawBody === true) return done(null, payload);
    done(new ApiError(415, 'unsupported_media_type', 'Send JSON with content-type application/json.'), undefined);
  });

  // ── REST routes from the table ──────────────────────────────────────────────────────────
  for (const spec of routes) {
    const isEvents = spec.operationId === 'searchEvents';
    app.route({
      method: spec.method,
      url: spec.url,
      config: { access: spec.access, ...(spec.rawBody ? { rawBody: true } : {}) },
      ...(spec.bodyLimit === undefined ? {} : { bodyLimit: Math.max(spec.bodyLimit, config.maxBodyBytes) }),
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const params = parse(spec.params, request.params, 'params');
        const query = parse(spec.query, request.query ?? {}, 'query');
        const body = parse(spec.body, request.body, 'body');
        const result = await spec.handler({ params, query, body, tenant: request.tenant, request, reply });
        return reply.send(result);
      },
      ...(isEvents ? { wsHandler: (socket: WebSocket, request: FastifyRequest) => openSocket(socket, request) } : {}),
    });
  }

  // ── docs, health, metrics ───────────────────────────────────────────────────────────────
  app.get('/docs/openapi.json', async () => openapi);
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(openApiHtml(openapi)));
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    const ready = await isReady(deps);
    return reply.code(ready ? 200 : 503).send({ ready, nats: !deps.nc.isClosed(), index: deps.index.ready });
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  if (config.webUi) {
    const { registerWebUi } = await import('./web-ui.js');
    await registerWebUi(app);
  }

  // ── the event WebSocket ─────────────────────────────────────────────────────────────────
  const sessions = new Set<SocketSession>();
  function openSocket(socket: WebSocket, request: FastifyRequest): void {
    const queued: string[] = [];
    let session: SocketSession | undefined;
    let authed = request.tenant !== '';
    let authenticating = false;
    let alive = true;
    const fail = (code: number, reason: string): void => socket.close(code, reason);
    const refused = refusedUpgrades.get(request);
    if (refused !== undefined) return fail(CloseCode.Unauthorized, refused);
    const id = ConversationId.safeParse((request.params as { id?: unknown }).id);
    const query = SocketQuery.safeParse(request.query ?? {});
    if (!id.success) return fail(CloseCode.BadFrame, 'invalid conversation id');
    if (!query.success) return fail(CloseCode.BadFrame, socketQueryProblem(query.error));
    const authTimer = authed
      ? undefined
      : setTimeout(() => fail(CloseCode.Unauthorized, 'no auth frame in time'), config.authTimeoutMs);
    const ping = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, SOCKET_PING_MS);
    socket.on('pong', () => (alive = true));
    let release: (() => void) | undefined;
    socket.on('close', () => {
      clearTimeout(authTimer);
      clearInterval(ping);
      if (session) {
        session.feed.remove(session);
        sessions.delete(session);
      }
      release?.();
    });
    const frames = new RateLimiter(20);
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      const text = isBinary ? '' : data.toString('utf8');
      if (!authed && !authenticating) {
        authenticating = true;
        void authenticate(text);
        return;
      }
      if (!session) {
        // frames sent right behind the auth frame wait for the session
        if (queued.length < 16) queued.push(text);
        else
          socket.send(
            JSON.stringify({
              type: 'error',
              ...frameId(text),
              code: 'rate_limited',
              message: 'Too many frames before the subscription started; this one was dropped.',
            }),
          );
        return;
      }
      if (frames.take('socket') > 0) {
        // with the frame's id, so the client knows which of its commands was dropped
        socket.send(
          JSON.stringify({
            type: 'error',
            ...frameId(text),
            code: 'rate_limited',
            message: 'Too many frames: at most 20 per second.',
          }),
        );
        return;
      }
      void session.onFrame(text);
    });

    const authenticate = async (text: string): Promise<void> => {
      let key: unknown;
      try {
        const frame = JSON.parse(text) as { type?: unknown; api_key?: unknown };
        key = frame.type === 'auth' ? frame.api_key : undefined;
      } catch {
        key = undefined;
      }
      if (typeof key !== 'string' || key.length === 0 || key.length > 256)
        return fail(CloseCode.Unauthorized, 'the first frame must be {"type":"auth","api_key":"..."}');
      if (limiter.take(hashApiKey(key)) > 0) return fail(CloseCode.Unauthorized, 'rate limited: retry later');
      const record = await deps.keys.resolve(key).catch(() => null);
      if (!record) return fail(CloseCode.Unauthorized, 'the API key is not valid');
      clearTimeout(authTimer);
      request.tenant = record.tenant;
      authed = true;
      await begin();
    };

    const begin = async (): Promise<void> => {
      const ref = { tenant: request.tenant, conversation: id.data };
      // the shared feed knows the tail: a socket on a conversation others already watch costs no NATS request
      const slot = await hub.acquire(ref).catch((error: unknown) => {
        logger.warn({ err: error }, 'socket could not load the conversation');
        return undefined;
      });
      if (slot === undefined) return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
      if (slot === null)
        return fail(
          CloseCode.TooManySubscribers,
          `too many subscribers on this conversation (limit ${config.maxSubscribersPerConversation})`,
        );
      release = slot.release;
      if (socket.readyState !== socket.OPEN) return release(); // closed while the slot was taken: its close handler has run
      if (slot.feed.tail.lastSeq === 0) return fail(CloseCode.NotFound, `no conversation "${id.data}"`);
      const afterSeq = query.data.after_seq;
      if (afterSeq > slot.feed.tail.lastSeq) {
        // past the feed's tail: the feed may trail another gateway's by a moment, so the log's own tail decides
        const tail = await log.tail(ref).catch(() => undefined);
        if (socket.readyState !== socket.OPEN) return;
        if (tail === undefined) return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
        if (afterSeq > tail.lastSeq)
          return fail(
            CloseCode.BadFrame,
            `after_seq ${afterSeq} is past the last seq ${tail.lastSeq}: reconnect with after_seq at most ${tail.lastSeq}`,
          );
      }
      const indexed = deps.index.get(ref.tenant, ref.conversation);
      let status: string;
      try {
        status =
          indexed && indexed.last_seq >= slot.feed.tail.lastSeq
            ? indexed.status
            : (await conversations.snapshot(ref)).status;
      } catch (error) {
        if (error instanceof ApiError && error.statusCode === 404)
          return fail(CloseCode.NotFound, `no conversation "${id.data}"`);
        logger.warn({ err: error }, 'socket could not load the conversation');
        return fail(CloseCode.Unavailable, 'the log is unavailable; reconnect later');
      }
      if (socket.readyState !== socket.OPEN) return release();
      session = new SocketSession(socket, slot.feed, {
        ref,
        afterSeq: query.data.after_seq,
        highWaterBytes: config.socketHighWaterBytes,
        log,
        conversations,
        secrets,
        logger,
      });
      sessions.add(session);
      slot.feed.add(session);
      session.start(status);
      for (const text of queued.splice(0)) void session.onFrame(text);
    };

    if (authed) void begin();
  }

  await scheduleRunner?.start(deps.nc);

  return {
    app,
    hub,
    openapi,
    routes,
    secrets,
    async close() {
      for (const session of sessions)
        session.close(CloseCode.GoingAway, 'the gateway is shutting down; reconnect with after_seq');
      starter?.stop();
      hub.stop();
      sandboxes.stop();
      await retention.stop();
      await scheduleRunner?.stop();
      await app.close();
    },
  };
}

function parse<T>(
  schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: ZodError } } | undefined,
  value: unknown,
  where: string,
): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(where, result.error);
  return result.data;
}

/** `{ id }` of a client frame that has a string id (as SocketSession echoes it), else nothing. */
function frameId(text: string): { id?: string } {
  try {
    const id = (JSON.parse(text) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? { id: id.slice(0, 64) } : {};
  } catch {
    return {};
  }
}

function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers[API_KEY_HEADER];
  if (typeof header === 'string' && header.length > 0) return header.slice(0, 256);
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(\S{1,256})$/i.exec(authorization) : null;
  return match?.[1];
}

/** Why a socket's query string was refused, in a close reason's few bytes. */
function socketQueryProblem(error: ZodError): string {
  const unknown = error.issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown)
    return `unknown query parameter ${unknown.keys.map((key) => `"${key.slice(0, 32)}"`).join(', ')}: only after_seq is taken`;
  return 'after_seq must be a non-negative integer';
}

function isUpgrade(request: FastifyRequest): boolean {
  return (request.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** fastify's own errors (bad JSON, body too large, wrong content type) as stable API codes. */
function toApiError(error: Error & { statusCode?: number; code?: string }): ApiError {
  if (error instanceof ApiError) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError(400, 'invalid_json', 'The body is not valid JSON.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'body_too_large', 'The body is larger than this gateway accepts.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(415, 'unsupported_media_type', 'Send JSON with content-type application/json.');
  }
  if (error instanceof SyntaxError) return new ApiError(400, 'invalid_json', 'The body is not valid JSON.');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError(
      error.statusCode,
      error.statusCode === 404 ? 'route_not_found' : 'validation_failed',
      error.message,
    );
  }
  // the log's and the snapshots' errors say whether they are transient; raw NATS client errors are
  const transient =
    (error as { isRetryable?: unknown }).isRetryable === true ||
    /timeout|disconnect|closed|no responders|connection/i.test(error.message);
  return transient
    ? new ApiError(503, 'unavailable', 'NATS is not reachable right now; retry.', undefined, 1)
    : new ApiError(500, 'internal', 'Internal error; it has been logged.');
}

async function isReady(deps: GatewayDependencies): Promise<boolean> {
  if (deps.nc.isClosed() || !deps.index.ready) return false;
  return deps.log.jsm.streams.info(deps.log.streamName).then(
    () => true,
    () => false,
  );
}

function gatewayMetrics(hub: SocketHub) {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'gateway' });
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'flotilla_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'flotilla_http_request_seconds',
    help: 'HTTP request latency',
    labelNames: ['route', 'method'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  new Gauge({
    name: 'flotilla_ws_sockets',
    help: 'Open event sockets',
    registers: [registry],
    collect() {
      this.set(hub.sockets);
    },
  });
  new Gauge({
    name: 'flotilla_ws_feeds',
    help: 'Conversations with a live feed on this gateway',
    registers: [registry],
    collect() {
      this.set(hub.conversations);
    },
  });
  const scheduleRuns = new Counter({
    name: 'flotilla_schedule_runs_total',
    help: "Schedules' runs this gateway took, by outcome (succeeded, failed, skipped, dropped)",
    labelNames: ['outcome'],
    registers: [registry],
  });
  return { registry, requests, latency, scheduleRuns };
}

/** What `/v1/server-info` shows of the operator's agents: names, models and tools, never a key or where it comes from. */
function agentsInfo(catalog: AgentCatalog): ServerInfo['agents'] {
  const custom = catalog.limits.customModels;
  return {
    templates: catalog.templateNames().map((name) => {
      const spec = catalog.template(name)!;
      return { name, model: spec.llm.model, tools: [...spec.tools] };
    }),
    profiles: catalog.profiles().map((profile) => ({ ...profile, fallbacks: [...profile.fallbacks] })),
    custom_models:
      custom === false
        ? false
        : { providers: custom.providers ? [...custom.providers] : null, base_urls: [...custom.baseURLs] },
    default: { model: catalog.defaultSpec.llm.model, tools: [...catalog.defaultSpec.tools] },
    mcp: { commands: [...(catalog.limits.mcpCommands ?? [])], url_prefixes: [...(catalog.limits.mcpUrls ?? [])] },
    sub_agents: catalog.subAgents().map((agent) => ({ ...agent, tools: [...agent.tools] })),
  };
}
