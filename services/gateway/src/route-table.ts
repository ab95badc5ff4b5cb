import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';

/** Who may call a route: any tenant's API key, the admin key, or anyone. */
export type Access = 'tenant' | 'admin' | 'public';

export type RouteContext<P, Q, B> = {
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  /** The caller's tenant (routes with access 'tenant'). */
  readonly tenant: string;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
};

/** Raw bytes rather than JSON, as a request or a response body (a file's content). */
export type RawBody = { readonly contentType: 'application/octet-stream'; readonly description: string };

/**
 * A REST route, declared once: fastify registers it and the OpenAPI document is generated
 * from the same declaration, so the two cannot drift apart.
 */
export type RouteSpec<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> = {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** fastify syntax (`/v1/conversations/:id`); OpenAPI gets `{id}`. */
  readonly url: string;
  readonly operationId: string;
  readonly summary: string;
  readonly tag: string;
  readonly access: Access;
  readonly params?: P;
  readonly query?: Q;
  readonly body?: B;
  /** Status → response schema (null: no body, or the raw one of `rawResponse`). */
  readonly responses: Readonly<Record<number, z.ZodType | null>>;
  /** The body of one success status is bytes the handler sends itself (a file's content), not JSON. */
  readonly rawResponse?: RawBody & { readonly status: number };
  /** The request body is raw bytes: the handler reads `request.body`, the unread stream (no `body` schema then). */
  readonly rawBody?: RawBody;
  /** The route's body limit when it differs from the gateway's (FLOTILLA_GATEWAY_MAX_BODY_BYTES). */
  readonly bodyLimit?: number;
  /** Error statuses the route may answer with (beyond 400/401/429/503 that every route may). */
  readonly errors?: readonly number[];
  handler(context: RouteContext<z.output<P>, z.output<Q>, z.output<B>>): Promise<unknown>;
};

/** Keeps the route's generic types while collecting specs into one table. */
export function route<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec {
  return spec as unknown as RouteSpec;
}
