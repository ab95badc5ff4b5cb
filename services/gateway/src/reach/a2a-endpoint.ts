// Flotilla as an A2A agent (Agent2Agent, v1.0 and v0.3): its card at
// /.well-known/agent-card.json, JSON-RPC at POST /a2a. The SDK's JSON-RPC transports read each
// method's params and write its answers; ConversationTasks answers them from the caller's
// conversations, through this gateway's own API with the caller's key.
import { formatSSEErrorEvent, formatSSEEvent, SSE_HEADERS, A2A_VERSION_HEADER } from '@a2a-js/sdk';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { JsonRpcTransportHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointContext } from './endpoint-context.js';
import {
  A2A_PATH,
  AGENT_CARD_ROUTE,
  agentCard,
  agentCardJson,
  legacyAgentCardJson,
  type A2aVersion,
} from './a2a-card.js';
import { readEnvelope, requestedVersion, type JsonRpcRequest } from './a2a-json-rpc.js';
import { ConversationTasks } from './a2a-task-handler.js';

const INTERNAL_ERROR = -32_603;
/** A comment line on an idle stream, so proxies keep it open while a run works quietly. */
const KEEP_ALIVE_MS = 15_000;

export async function registerA2aEndpoint(app: FastifyInstance, context: EndpointContext): Promise<void> {
  const cardFor = (request: FastifyRequest) =>
    agentCard(context.catalog, { version: context.version, baseUrl: `${request.protocol}://${request.host}` });

  app.get(AGENT_CARD_ROUTE, { config: { access: 'public' } }, async (request, reply) => {
    const card = cardFor(request);
    const asked = request.headers[A2A_VERSION_HEADER.toLowerCase()];
    // a v1.0 client says so (the SDK's resolver does); others get v0.3's card, which v1.0's clients also read
    const v1 = typeof asked === 'string' && asked.trim().startsWith('1');
    void reply.header('vary', A2A_VERSION_HEADER).header('cache-control', 'public, max-age=300');
    return v1 ? agentCardJson(card) : legacyAgentCardJson(card);
  });

  // the body reaches the handler as text, so JSON that does not parse is JSON-RPC's parse error, not the API's 400
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    scope.post(A2A_PATH, { config: { access: 'tenant' } }, async (request, reply) => {
      const envelope = readEnvelope(request.body);
      if ('refused' in envelope) return envelope.refused;
      const { request: call } = envelope;
      let version: A2aVersion;
      try {
        version = requestedVersion(request, call.method);
      } catch (error) {
        return { jsonrpc: '2.0', id: call.id ?? null, error: JsonRpcTransportHandler.mapToJSONRPCError(error) };
      }
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const tasks = new ConversationTasks({
        runs: context.runs,
        client: context.runs.clientFor(request),
        card: cardFor(request),
        signal: gone.signal,
      });
      const transport =
        version === '1.0' ? new JsonRpcTransportHandler(tasks) : new LegacyJsonRpcTransportHandler(tasks);
      const answer: unknown = await transport.handle(call, new ServerCallContext({ requestedVersion: version }));
      if (isStream(answer)) return streamAnswer(reply, call, answer, version, context);
      // the transports answer every failure as JSON-RPC: one that is no client's mistake is logged here
      const failed = (answer as { error?: { code?: unknown; message?: unknown } }).error;
      if (failed?.code === INTERNAL_ERROR)
        context.logger.warn({ method: call.method, reason: failed.message }, 'an A2A call failed');
      return answer;
    });
  });
}

function isStream(answer: unknown): answer is AsyncGenerator<unknown, void, undefined> {
  return typeof (answer as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}

/**
 * A streaming method's answers as server-sent events, each a JSON-RPC response. A failure before
 * the first is a plain JSON-RPC error answer (the client reads it as the method's error); one
 * after is an `error` event, and the stream ends.
 */
async function streamAnswer(
  reply: FastifyReply,
  call: JsonRpcRequest,
  stream: AsyncGenerator<unknown, void, undefined>,
  version: A2aVersion,
  context: EndpointContext,
): Promise<unknown> {
  const failure = (error: unknown) => {
    const answer =
      version === '1.0'
        ? JsonRpcTransportHandler.mapToJSONRPCError(error)
        : LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error);
    if (answer.code === INTERNAL_ERROR)
      context.logger.warn({ err: error, method: call.method }, 'an A2A stream failed');
    return { jsonrpc: '2.0', id: call.id ?? null, error: answer };
  };
  const iterator = stream[Symbol.asyncIterator]();
  let first: IteratorResult<unknown, void>;
  try {
    first = await iterator.next();
  } catch (error) {
    return failure(error);
  }
  reply.hijack();
  reply.raw.writeHead(200, SSE_HEADERS);
  const keepAlive = setInterval(() => reply.raw.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  try {
    for (let next = first; !next.done; next = await iterator.next()) reply.raw.write(formatSSEEvent(next.value));
  } catch (error) {
    // a caller that left is no failure (following stops, the run goes on)
    if (!reply.raw.destroyed) reply.raw.write(formatSSEErrorEvent(failure(error)));
  } finally {
    clearInterval(keepAlive);
    reply.raw.end();
  }
  return reply;
}
