import type { ConversationRef, EventLog, Tail } from '@flotilla/log';
import type { CachedConversation, ConversationCache, Delivery, HandleOutcome } from '@flotilla/runtime';

export type AtTail = { readonly ref: ConversationRef; readonly tail: Tail; readonly conversation: CachedConversation };

/**
 * The common start of every handler: a delivered commit is only a wake-up, acted on when it is
 * still the conversation's tail (a later commit will be delivered and decided on otherwise).
 * Returns the conversation loaded up to that tail, or the outcome to ack with.
 */
export async function loadAtTail(delivery: Delivery, log: EventLog, cache: ConversationCache): Promise<AtTail | HandleOutcome> {
  const ref = delivery.ref;
  if (!ref) return { ack: true, outcome: 'foreign_subject' };
  const last = await log.lastStreamSeq(ref);
  if (delivery.streamSeq < last) return { ack: true, outcome: 'not_tail' };
  const conversation = await cache.load(ref, last);
  return { ref, tail: conversation.tail, conversation };
}

export function isOutcome(value: AtTail | HandleOutcome): value is HandleOutcome {
  return 'ack' in value;
}
