import type { ConversationRef, EventLog, Tail } from '@flotilla/log';
import type { CachedConversation, ConversationCache, Delivery, HandleOutcome, TailHints } from '@flotilla/runtime';

export type Delivered<S = never> = {
  readonly ref: ConversationRef;
  readonly tail: Tail;
  readonly conversation: CachedConversation<S>;
};

export const NOT_TAIL: HandleOutcome = Object.freeze({ ack: true, outcome: 'not_tail' });

/**
 * The common start of every handler: the conversation as of the delivered commit. A delivered
 * commit is only a wake-up; what it asks for is decided from the log up to it.
 *
 * This usually costs no round trip: a cache already past the commit says it is not the tail
 * (a later commit will be delivered and decided on), and the delivered commit extends the cached
 * conversation. A cache that misses commits reads only those (the ones delivered here are held);
 * a conversation not cached at all is loaded only when the commit is its tail.
 *
 * A decision that there is nothing to do needs nothing more: the log's last commit is delivered
 * too, and decides. Before work that costs (a model call) or that waits (in progress), the
 * handler asks `isStillTail`. An append always expects the tail it loaded, so a commit that
 * landed meanwhile makes it conflict rather than fork the log.
 *
 * A group is not delivered its own kind of commit (libs/bus SELF_CONTINUING): a later commit of
 * that kind was written by an instance that decided after this one and carries on after it
 * before acknowledging the commit that woke it, or, if it died, that commit is delivered again.
 * So a first delivery may be dismissed for a later commit of any kind; a redelivery never is: it
 * decides at the conversation's current tail, whatever lies between.
 */
export async function loadDelivered<S = never>(
  delivery: Delivery,
  log: EventLog,
  cache: ConversationCache<S>,
  /** Says when the delivered commit alone (its header) shows there is nothing to do, whatever came before it. */
  dismiss?: (delivery: Delivery) => HandleOutcome | undefined,
): Promise<Delivered<S> | HandleOutcome> {
  const ref = delivery.ref;
  if (!ref) return { ack: true, outcome: 'foreign_subject' };
  if (delivery.deliveryCount > 1 && !delivery.laterQueued()) {
    const conversation = await cache.load(ref);
    return { ref, tail: conversation.tail, conversation };
  }
  const cached = cache.peek(ref);
  if (cached && cached.tail.streamSeq > delivery.streamSeq) return NOT_TAIL;
  if (delivery.laterQueued()) {
    // a later commit of this conversation waits behind this one here: it decides
    if (cached) cache.extend(ref, delivery.message);
    return NOT_TAIL;
  }
  // a commit the handler can tell from its header needs no history: it extends a cache it directly
  // continues, or is held past a gap (commits another instance took), which is read when one matters
  const dismissed = dismiss?.(delivery);
  if (dismissed) {
    if (cached) cache.extend(ref, delivery.message);
    return dismissed;
  }
  // not cached (a backlog, or a conversation new to this process): an old commit is told apart
  // by one direct get, without reading the conversation
  if (!cached && !(await isStillTail(delivery, ref, log, cache.tails))) return NOT_TAIL;
  const conversation = await cache.load(ref, delivery.streamSeq, delivery.message);
  return { ref, tail: conversation.tail, conversation };
}

/**
 * Is the tail a handler decided at (`at`: the delivered commit, unless loadDelivered read on past
 * it) still the conversation's last message? Free when a later message is already known, or when
 * the server had nothing pending behind the delivered commit a moment ago; otherwise one direct
 * get, whose answer is remembered in `hints`.
 */
export async function isStillTail(
  delivery: Delivery,
  ref: ConversationRef,
  log: EventLog,
  hints: TailHints,
  at = delivery.streamSeq,
): Promise<boolean> {
  if (hints.pastTail(ref, at)) return false;
  if (at === delivery.streamSeq && delivery.likelyTail) return true;
  const last = await log.lastStreamSeq(ref);
  hints.note(ref, last);
  return last <= at;
}

export function isOutcome<S>(value: Delivered<S> | HandleOutcome): value is HandleOutcome {
  return 'ack' in value;
}
