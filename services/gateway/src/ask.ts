import type { AskAnswer } from '@flotilla/api';
import { answersUnder, AskSubjects, connectionInboxPrefix } from '@flotilla/bus';
import type { ConversationRef } from '@flotilla/log';
import { ASK_PART_HEADER, AskFailure, AskResult, type AskRequest } from '@flotilla/workers';
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { ApiError } from './api-error.js';

/** How long a step worker may take to start answering, and to finish. */
const FIRST_PART_MS = 15_000;
const WHOLE_ANSWER_MS = 180_000;

/**
 * Puts a side question to any one step worker (AskSubjects.ask) and gathers its answer from the
 * parts it streams to this gateway's answers branch: text as the model writes it (`onDelta`),
 * then the answer, or why there is none (as the API's error). Nothing is appended to the log.
 */
export async function askConversation(
  nc: NatsConnection,
  ref: ConversationRef,
  question: string,
  onDelta?: (text: string) => void,
): Promise<AskAnswer> {
  const inbox = createInbox(answersUnder(connectionInboxPrefix(nc) ?? '_INBOX'));
  const subscription = nc.subscribe(inbox, { timeout: FIRST_PART_MS });
  const request: AskRequest = { tenant: ref.tenant, conversation: ref.conversation, question };
  const whole = setTimeout(() => subscription.unsubscribe(), WHOLE_ANSWER_MS);
  try {
    nc.publish(AskSubjects.ask, JSON.stringify(request), { reply: inbox });
    for await (const part of subscription) {
      // nats-server's "no responders" status: no step worker listens
      if (part.headers?.code === 503)
        throw new ApiError(
          503,
          'unavailable',
          'No step worker is running to answer the question: start one, or retry later.',
          undefined,
          5,
        );
      const kind = part.headers?.get(ASK_PART_HEADER);
      if (kind === 'delta') onDelta?.(part.string());
      else if (kind === 'answer') return AskResult.parse(part.json());
      else if (kind === 'error') throw failureOf(AskFailure.parse(part.json()), ref);
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    const code = (error as { code?: string }).code;
    if (code === 'TIMEOUT' || /timeout/i.test((error as Error).message))
      throw new ApiError(
        503,
        'unavailable',
        'No step worker answered the question in time: is one running? Retry later.',
        undefined,
        5,
      );
    throw error;
  } finally {
    clearTimeout(whole);
    subscription.unsubscribe();
  }
  throw new ApiError(503, 'unavailable', 'The answer did not come in time; retry.', undefined, 5);
}

function failureOf(failure: AskFailure, ref: ConversationRef): ApiError {
  switch (failure.code) {
    case 'not_found':
      return ApiError.notFound(ref.conversation);
    case 'bad_request':
      return new ApiError(400, 'validation_failed', failure.message);
    default:
      return new ApiError(502, 'ask_failed', `The conversation's model could not answer: ${failure.message}`);
  }
}
