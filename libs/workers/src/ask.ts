import { SpecFold, stepRequest } from '@flotilla/agent';
import { AskAnswer } from '@flotilla/api';
import { AskSubjects } from '@flotilla/bus';
import { ConversationId, draftEvent, TenantId, type Event } from '@flotilla/events';
import type { EventLog } from '@flotilla/log';
import { headers as natsHeaders, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { z } from 'zod';
import type { ConversationAgents } from './conversation-agents.js';

/** The header telling the parts of an answer apart: text as the model writes it, the answer, or why there is none. */
export const ASK_PART_HEADER = 'Flotilla-Ask';
export type AskPart = 'delta' | 'answer' | 'error';

/** A side question as the gateway sends it (its tenant already checked against the caller's key). */
export const AskRequest = z.strictObject({
  tenant: TenantId,
  conversation: ConversationId,
  question: z.string().min(1).max(100_000),
});
export type AskRequest = z.infer<typeof AskRequest>;

/** The last part of an answer: the API's answer as it is sent on. */
export const AskResult = AskAnswer;
export type AskResult = AskAnswer;

/** Why a question got no answer: `not_found` (no such conversation), `bad_request`, `unreadable_spec`, `model_failed`. */
export const AskFailure = z.strictObject({
  code: z.enum(['not_found', 'bad_request', 'unreadable_spec', 'model_failed']),
  message: z.string(),
});
export type AskFailure = z.infer<typeof AskFailure>;

/** How the question is put to the model: after the conversation, as the user's, asking for words rather than actions. */
const QUESTION_PREFIX =
  'A side question about this conversation, to answer in words only (call no tool; nothing you say here is kept in the conversation):\n\n';

export type QuestionServerDependencies = {
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly agents: ConversationAgents;
  /** How long one answer may take. Default 120 s. */
  readonly timeoutMs?: number;
  readonly onError?: (error: unknown) => void;
};

/**
 * Answers side questions (AskSubjects.ask, one step worker of the queue group each): the
 * conversation's current view, read from its whole log, then the question, sent to the model of
 * the spec in force with the spec's tools offered (a provider reads earlier tool calls only beside
 * their tools); the text streams back as it comes, then the answer. Nothing is appended.
 */
export function serveQuestions(deps: QuestionServerDependencies): Subscription {
  return deps.nc.subscribe(AskSubjects.ask, {
    queue: AskSubjects.queue,
    callback: (error, message) => {
      if (error) return;
      void answer(deps, message).catch((failure: unknown) => deps.onError?.(failure));
    },
  });
}

async function answer(deps: QuestionServerDependencies, message: Msg): Promise<void> {
  const reply = message.reply;
  if (!reply) return;
  const send = (part: AskPart, body: string): void => {
    const h = natsHeaders();
    h.set(ASK_PART_HEADER, part);
    deps.nc.publish(reply, body, { headers: h });
  };
  const fail = (failure: AskFailure): void => send('error', JSON.stringify(failure));
  let request: AskRequest;
  try {
    request = AskRequest.parse(message.json());
  } catch (error) {
    fail({ code: 'bad_request', message: `not a question: ${(error as Error).message.slice(0, 500)}` });
    return;
  }
  const ref = { tenant: request.tenant, conversation: request.conversation };
  const { events } = await deps.log.readEvents(ref);
  if (events.length === 0) {
    fail({ code: 'not_found', message: `no conversation ${ref.conversation}` });
    return;
  }
  const specs = new SpecFold().append(events);
  const lookup = deps.agents.of(specs.event(), specs.listed());
  if (!lookup.ok) {
    fail({ code: 'unreadable_spec', message: lookup.reason });
    return;
  }
  const question = {
    ...draftEvent({ ...ref, source: 'user' }, 'message', {
      role: 'user',
      content: [{ type: 'text', text: `${QUESTION_PREFIX}${request.question}` }],
    }),
    seq: events.at(-1)!.seq + 1,
  } as Event;
  const { request: generate } = stepRequest({ history: [...events, question], tools: lookup.agent.tools });
  try {
    const model = await deps.agents.model(ref, lookup.agent);
    const result = await model.generate(generate, {
      onDelta: (delta) => {
        if (delta.type === 'text' && delta.text.length > 0) send('delta', delta.text);
      },
      signal: AbortSignal.timeout(deps.timeoutMs ?? 120_000),
    });
    const text = result.content.map((part) => part.text).join('');
    if (text.trim() === '' && result.toolCalls.length > 0) {
      // the question asks for words; offered the spec's tools, the model may still reach for one
      fail({
        code: 'model_failed',
        message: `the model called ${result.toolCalls.map((call) => call.name).join(', ')} instead of answering in words; ask again`,
      });
      return;
    }
    const { usage } = result;
    const answered: AskResult = {
      answer: text,
      model: result.model,
      // the keys and meanings of llm_usage events and a conversation's usage
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        cache_read_tokens: usage.cacheReadTokens,
        cache_write_tokens: usage.cacheWriteTokens,
        reasoning_tokens: usage.reasoningTokens,
        cost_usd: result.costUsd ?? 0,
      },
    };
    send('answer', JSON.stringify(answered));
  } catch (error) {
    fail({ code: 'model_failed', message: (error as Error).message.slice(0, 2_000) });
  }
}
