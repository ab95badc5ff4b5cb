// Flotilla as an OpenAI-compatible model (FLOTILLA_GATEWAY_AGENT_ENDPOINTS `openai`): Chat
// Completions, streamed or not, answered by an agent run, and the models list OpenAI clients ask
// for (docs/api.md, "OpenAI-compatible chat completions"). Every answer of these routes, errors
// of the access hook and the body parser included, is in OpenAI's shape.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointContext } from './endpoint-context.js';
import { answerChatCompletion } from './openai-chat-completion.js';
import { toOpenAiError } from './openai-errors.js';
import { modelEntries, modelEntryOf } from './openai-models.js';

export function registerOpenAiEndpoint(app: FastifyInstance, context: EndpointContext): void {
  const { runs, logger } = context;
  const errorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const { answer, unexpected } = toOpenAiError(error);
    if (unexpected) logger.error({ err: error, url: request.url, method: request.method }, 'request failed');
    if (answer.retryAfterSeconds !== undefined) void reply.header('retry-after', String(answer.retryAfterSeconds));
    if (!answer.retryable) void reply.header('x-should-retry', 'false');
    void reply.code(answer.status).send(answer.body());
  };
  const agentsOf = async (request: FastifyRequest) => (await runs.clientFor(request).serverInfo()).agents;

  app.route({
    method: 'GET',
    url: '/v1/models',
    config: { access: 'tenant' },
    errorHandler,
    handler: async (request) => ({ object: 'list', data: modelEntries(await agentsOf(request)) }),
  });
  app.route({
    method: 'GET',
    url: '/v1/models/:model',
    config: { access: 'tenant' },
    errorHandler,
    handler: async (request) => modelEntryOf((request.params as { model: string }).model, await agentsOf(request)),
  });
  app.route({
    method: 'POST',
    url: '/v1/chat/completions',
    config: { access: 'tenant' },
    errorHandler,
    handler: (request, reply) => answerChatCompletion(runs, logger, request, reply),
  });
}
