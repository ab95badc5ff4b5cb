// The gateway's OpenAPI document as the openapi*.test.ts files read it: a gateway of their own,
// the document it built, and its operations with their routes.
import { afterAll, beforeAll } from 'vitest';
import type { RouteSpec } from '../route-table.js';
import { startGatewayHarness, type GatewayHarness } from './gateway-harness.js';

export type Json = Record<string, unknown>;
export type Operation = {
  operationId: string;
  summary: string;
  tags: string[];
  security?: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: Json }[];
  requestBody?: { required: boolean; content: Record<string, { schema: Json }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Json }> }>;
};
export type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
};
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'HEAD' | 'OPTIONS';

export let h: GatewayHarness;
export let document: Document;

/** Before the file's tests: a gateway harness (`h`) and the document its gateway built (`document`); after them, gone. */
export function startDocumentedGateway(): void {
  beforeAll(async () => {
    h = await startGatewayHarness();
    document = h.gateway.openapi as unknown as Document;
  });
  afterAll(async () => {
    await h?.[Symbol.asyncDispose]();
  });
}

/** `/v1/conversations/{id}` → `/v1/conversations/:id` */
export const toFastify = (path: string): string => path.replace(/\{([A-Za-z_]+)\}/g, ':$1');
export const toOpenApi = (url: string): string => url.replace(/:([A-Za-z_]+)/g, '{$1}');

export function operations(): { method: Method; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase() as Method, path, operation })),
  );
}

export const specOf = (operationId: string): RouteSpec => {
  const spec = h.gateway.routes.find((route) => route.operationId === operationId);
  if (!spec) throw new Error(`no route ${operationId} in the table`);
  return spec;
};
