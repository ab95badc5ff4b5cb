import { API_KEY_HEADER } from '@flotilla/api';
import { SpanKind, startSpan } from '@flotilla/tracing';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { hashApiKey, sameKey, type ApiKeyStore } from './api-keys.js';
import type { GatewayMetrics } from './gateway-metrics.js';
import type { RateLimiter } from './rate-limiter.js';

/**
 * A socket's key refused in its header: the upgrade goes through and the socket is closed with
 * 4001 and the reason (a browser sees close codes, never an upgrade's HTTP status).
 */
export type RefusedUpgrades = WeakMap<FastifyRequest, string>;

/**
 * Traces: a span per request (tracing on: OTEL_EXPORTER_OTLP_ENDPOINT), active for its handler,
 * so the commits it appends carry it; a client's valid traceparent header is its parent.
 */
export function registerRequestTracing(app: FastifyInstance): void {
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
}

/**
 * Authentication and rate limiting by the route's access (public, tenant, admin), the request
 * counted in the metrics whatever the answer; returns the sockets' upgrades whose key was refused.
 */
export function registerAccessControl(
  app: FastifyInstance,
  options: {
    readonly keys: ApiKeyStore;
    readonly limiter: RateLimiter;
    readonly metrics: GatewayMetrics;
    readonly adminKey: string | undefined;
  },
): RefusedUpgrades {
  const { keys, limiter, metrics, adminKey } = options;
  const refusedUpgrades: RefusedUpgrades = new WeakMap<FastifyRequest, string>();
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
      if (!adminKey || !sameKey(key, adminKey)) throw new ApiError(403, 'forbidden', 'This route needs the admin key.');
      return;
    }
    const record = await keys.resolve(key);
    if (!record) return refuse(new ApiError(401, 'unauthorized', 'The API key is not valid.'));
    request.tenant = record.tenant;
  });
  return refusedUpgrades;
}

/** The API key a request presents: its `${API_KEY_HEADER}` header, else its bearer token. */
export function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers[API_KEY_HEADER];
  if (typeof header === 'string' && header.length > 0) return header.slice(0, 256);
  const authorization = request.headers.authorization;
  const match = authorization ? /^Bearer\s+(\S{1,256})$/i.exec(authorization) : null;
  return match?.[1];
}

function isUpgrade(request: FastifyRequest): boolean {
  return (request.headers.upgrade ?? '').toLowerCase() === 'websocket';
}
