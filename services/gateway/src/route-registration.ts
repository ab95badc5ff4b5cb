import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { ZodError } from 'zod';
import { ApiError, validationError } from './api-error.js';
import type { RouteSpec } from './route-table.js';

/** The bodies routes take: JSON, and raw bytes only where a route reads its upload itself. */
export function registerBodyParsers(app: FastifyInstance): void {
  // the API takes JSON: fastify's own text/plain parser would hand a route a string to refuse as 400
  app.removeContentTypeParser('text/plain');
  // a route that takes raw bytes (an upload) reads the body's stream itself, bounded by its own limit; elsewhere bytes are refused like any body that is not JSON
  app.addContentTypeParser('application/octet-stream', (request, payload, done) => {
    if (request.routeOptions.config?.rawBody === true) return done(null, payload);
    done(new ApiError(415, 'unsupported_media_type', 'Send JSON with content-type application/json.'), undefined);
  });
}

/**
 * The REST routes from the table: each request's params, query and body parsed by the route's
 * schemas (400 naming what is wrong) before its handler; the events route also takes the event
 * WebSocket (`openSocket`).
 */
export function registerTableRoutes(
  app: FastifyInstance,
  routes: readonly RouteSpec[],
  options: {
    readonly maxBodyBytes: number;
    readonly openSocket: (socket: WebSocket, request: FastifyRequest) => void;
  },
): void {
  const { maxBodyBytes, openSocket } = options;
  for (const spec of routes) {
    const isEvents = spec.operationId === 'searchEvents';
    app.route({
      method: spec.method,
      url: spec.url,
      config: { access: spec.access, ...(spec.rawBody ? { rawBody: true } : {}) },
      ...(spec.bodyLimit === undefined ? {} : { bodyLimit: Math.max(spec.bodyLimit, maxBodyBytes) }),
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
