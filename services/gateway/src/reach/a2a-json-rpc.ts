// The JSON-RPC envelope of a request to /a2a, before the SDK's transport reads its method: the
// body must be JSON (-32700 otherwise) and one JSON-RPC 2.0 request (-32600), and it names the
// protocol version it speaks (the A2A-Version header; without one, v1.0 for v1.0's method names,
// else v0.3, as the SDK's own servers read it).
import { A2A_VERSION_HEADER } from '@a2a-js/sdk';
import { VersionNotSupportedError } from '@a2a-js/sdk/errors';
import { isV1JsonRpcMethod } from '@a2a-js/sdk/compat/v0_3';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { A2A_VERSIONS, type A2aVersion } from './a2a-card.js';

const PARSE_ERROR = -32_700;
const INVALID_REQUEST = -32_600;

const RequestId = z.union([z.string(), z.number().int(), z.null()]);
const JsonRpcRequest = z.object({
  jsonrpc: z.literal('2.0'),
  method: z.string().min(1),
  id: RequestId.optional(),
  params: z.unknown().optional(),
});
export type JsonRpcRequest = z.infer<typeof JsonRpcRequest>;

export type JsonRpcErrorResponse = {
  readonly jsonrpc: '2.0';
  readonly id: string | number | null;
  readonly error: { readonly code: number; readonly message: string };
};

/** The request in `body`, or the JSON-RPC error to answer it with. */
export function readEnvelope(body: unknown): { request: JsonRpcRequest } | { refused: JsonRpcErrorResponse } {
  let value: unknown;
  try {
    value = JSON.parse(typeof body === 'string' ? body : '');
  } catch {
    return { refused: errorResponse(null, PARSE_ERROR, 'Parse error: the body is not JSON.') };
  }
  const parsed = JsonRpcRequest.safeParse(value);
  if (parsed.success) return { request: parsed.data };
  const id = RequestId.safeParse((value as { id?: unknown } | null)?.id);
  const issue = parsed.error.issues[0];
  const what = Array.isArray(value)
    ? 'batches are not supported: send one request per call'
    : `${issue?.path.join('.') || 'the body'}: ${issue?.message ?? 'not a request'}`;
  return { refused: errorResponse(id.success ? id.data : null, INVALID_REQUEST, `Invalid Request: ${what}.`) };
}

/** The protocol version a request speaks: its A2A-Version header, else by its method's name. */
export function requestedVersion(request: FastifyRequest, method: string): A2aVersion {
  const header = request.headers[A2A_VERSION_HEADER.toLowerCase()];
  const asked = typeof header === 'string' ? header.trim() : undefined;
  if (asked === undefined || asked === '') return isV1JsonRpcMethod(method) ? '1.0' : '0.3';
  const version = A2A_VERSIONS.find((known) => known === asked || `${known}.0` === asked);
  if (version === undefined)
    throw new VersionNotSupportedError(
      `A2A-Version ${asked} is not supported: this agent speaks ${A2A_VERSIONS.join(' and ')}.`,
    );
  return version;
}

export function errorResponse(id: string | number | null, code: number, message: string): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}
