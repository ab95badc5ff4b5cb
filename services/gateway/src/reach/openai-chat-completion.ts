// `POST /v1/chat/completions`: one agent run per request. A new conversation of the caller's
// tenant (from the template or profile `model` names) starts with the request's messages, or the
// conversation the `x-flotilla-conversation` header names goes on with the last user message; the
// run is followed to rest and its final message is the completion.
import type { Conversation } from '@flotilla/api';
import { ConversationId, type Event } from '@flotilla/events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { AgentRuns, StartedRun } from './agent-runs.js';
import { AnswerPieces } from './openai-answer-pieces.js';
import { completionId, completionOf, usageOfRun, type CompletionHead } from './openai-completion.js';
import { OpenAiError, toOpenAiError } from './openai-errors.js';
import { agentChoiceOf } from './openai-models.js';
import { answerOf } from './openai-outcome.js';
import { parseChatRequest } from './openai-request.js';
import { CompletionStream } from './openai-stream.js';
import { runMessageText } from './openai-transcript.js';

/** Names the conversation: in a request, the one to go on with; in an answer, the one the run was in. */
export const CONVERSATION_HEADER = 'x-flotilla-conversation';

export async function answerChatCompletion(
  runs: AgentRuns,
  logger: Logger,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  const chat = parseChatRequest(request.body);
  const goOnWith = conversationToGoOnWith(request);
  const client = runs.clientFor(request);
  const choice = agentChoiceOf(chat.model, (await client.serverInfo()).agents);
  const text = runMessageText(chat.messages, goOnWith === undefined);
  // a conversation gone on with keeps its own agent: `model` is checked, not applied
  const existing = goOnWith === undefined ? undefined : await client.getConversation(goOnWith);
  if (existing) refuseBusy(existing);
  const before = existing?.usage;
  const started = await runs.start(
    client,
    goOnWith === undefined ? { text, ...choice } : { text, conversation: goOnWith },
  );

  const head: CompletionHead = {
    id: completionId(started.conversation),
    created: Math.floor(Date.now() / 1_000),
    model: chat.model,
  };
  // a caller gone stops the following, not the run
  const following = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) following.abort();
  });
  const follow = (pieces?: AnswerPieces) =>
    runs
      .follow(client, started, {
        signal: following.signal,
        ...(pieces
          ? { onDelta: (delta: string) => pieces.delta(delta), onEvent: (event: Event) => pieces.event(event) }
          : {}),
      })
      .catch((error: unknown) => {
        throw lostRun(started, error);
      });
  const usage = async () => usageOfRun((await client.getConversation(started.conversation)).usage, before);

  if (!chat.stream) {
    void reply.header(CONVERSATION_HEADER, started.conversation);
    try {
      const answer = answerOf(await follow());
      return completionOf(head, answer, await usage());
    } catch (error) {
      const { answer, unexpected } = toOpenAiError(error);
      if (unexpected) logger.error({ err: error, conversation: started.conversation }, 'a completion failed');
      throw answer.final();
    }
  }

  const stream = new CompletionStream(reply, head, {
    includeUsage: chat.includeUsage,
    headers: { [CONVERSATION_HEADER]: started.conversation },
  });
  const pieces = new AnswerPieces();
  try {
    const answer = answerOf(await follow(pieces));
    stream.answer(pieces.piecesOf(answer), await usage());
  } catch (error) {
    if (following.signal.aborted) return stream.close();
    const { answer, unexpected } = toOpenAiError(error);
    if (unexpected) logger.error({ err: error, conversation: started.conversation }, 'a streamed completion failed');
    stream.fail(answer);
  }
  return reply;
}

/** The `x-flotilla-conversation` header's conversation, checked, or undefined for a new one. */
function conversationToGoOnWith(request: FastifyRequest): string | undefined {
  const value = request.headers[CONVERSATION_HEADER];
  if (value === undefined) return undefined;
  const parsed = ConversationId.safeParse(value);
  if (!parsed.success)
    throw OpenAiError.invalid(
      `${CONVERSATION_HEADER}: must be one conversation id (1-64 characters of A-Z a-z 0-9 _ -).`,
      CONVERSATION_HEADER,
    );
  return parsed.data;
}

/**
 * A conversation to go on with must be at rest: a message to a running one joins its run, and to
 * one waiting for a confirmation it waits too, so neither would start the run this answer follows.
 */
function refuseBusy(conversation: Conversation): void {
  if (conversation.status === 'running')
    throw new OpenAiError(
      409,
      'conversation_busy',
      `The conversation "${conversation.id}" is running: go on with it once it comes to rest.`,
    ).final();
  if (conversation.status === 'waiting_for_confirmation')
    throw new OpenAiError(
      409,
      'confirmation_required',
      `The conversation "${conversation.id}" waits for a confirmation of an action: approve or reject it (POST /v1/conversations/${conversation.id}/confirmation) before going on with it.`,
    ).final();
}

/** Following the run failed (its event stream ended for good): the run itself goes on. */
function lostRun(started: StartedRun, error: unknown): OpenAiError {
  return new OpenAiError(
    502,
    'run_not_followed',
    `The run of conversation "${started.conversation}" goes on, but following it failed (${(error as Error).message}); read its answer with GET /v1/conversations/${started.conversation}/final-response.`,
  ).final();
}
