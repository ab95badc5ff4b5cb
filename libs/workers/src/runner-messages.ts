import { assertConversationRef, type ConversationRef } from '@flotilla/log';
import { RunnerHeader } from '@flotilla/runtime';
import { TRACEPARENT_HEADER } from '@flotilla/tracing';
import type { Msg } from '@nats-io/transport-node';

/** A wake-up another runner forwarded, with the commit it was delivered. */
export type Forwarded = {
  readonly ref: ConversationRef;
  readonly streamSeq: number;
  readonly data: Uint8Array;
  readonly traceparent?: string;
  /** Sent with RunnerHeader.Claim: this runner claims the workspace before it runs the batch. */
  readonly claim: boolean;
};

/**
 * A callback for a runner's subscription to requests (a forwarded wake-up, a deletion): each is
 * parsed, done, and answered `ok`, or why it was not done.
 */
export const answerRequests =
  <T>(parse: (message: Msg) => T | string, act: (request: T) => Promise<void>) =>
  (_error: unknown, message: Msg) => {
    const request = parse(message);
    if (typeof request === 'string') {
      message.respond(JSON.stringify({ ok: false, error: `bad request: ${request}` }));
      return;
    }
    act(request).then(
      () => message.respond(JSON.stringify({ ok: true })),
      (error: unknown) => message.respond(JSON.stringify({ ok: false, error: (error as Error).message })),
    );
  };

/** The conversation a runner request names in its headers, or why it names none. */
export function parseRef(message: Msg): ConversationRef | string {
  const ref = {
    tenant: message.headers?.get(RunnerHeader.Tenant) ?? '',
    conversation: message.headers?.get(RunnerHeader.Conversation) ?? '',
  };
  try {
    assertConversationRef(ref);
  } catch (error) {
    return (error as Error).message;
  }
  return ref;
}

/** The forwarded wake-up (the body is the delivered commit as stored), or why it is not one. The commit is validated when used. */
export function parseForward(message: Msg): Forwarded | string {
  const ref = parseRef(message);
  if (typeof ref === 'string') return ref;
  const streamSeq = Number(message.headers?.get(RunnerHeader.StreamSeq));
  if (!Number.isSafeInteger(streamSeq) || streamSeq < 1) return `${RunnerHeader.StreamSeq} must be a positive integer`;
  const traceparent = message.headers?.get(TRACEPARENT_HEADER);
  const claim = message.headers?.get(RunnerHeader.Claim) ?? '';
  if (claim !== '' && claim !== '1') return `${RunnerHeader.Claim} must be 1 when present`;
  return { ref, streamSeq, data: message.data, claim: claim === '1', ...(traceparent ? { traceparent } : {}) };
}
