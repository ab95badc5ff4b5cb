import { decodeCommit, placementOf } from './codec.js';
import { reportInvalid, scanCommits, type InvalidMessageHandling } from './commit-scan.js';
import type { ConversationMessages } from './conversation-messages.js';
import type { ConversationRef } from './conversation-ref.js';
import { EMPTY_TAIL, type Tail } from './stored-commit.js';

/**
 * The conversation's current tail (EMPTY_TAIL for a conversation with no commits): its last
 * message's stream sequence, and the last event seq of its last valid commit.
 */
export async function conversationTail(
  messages: ConversationMessages,
  ref: ConversationRef,
  handling: InvalidMessageHandling,
): Promise<Tail> {
  const last = await messages.last(ref);
  if (!last) return EMPTY_TAIL;
  const subject = last.subject;
  const decoded = decodeCommit(last, ref);
  if (decoded.ok) return { streamSeq: last.seq, lastSeq: decoded.commit.lastSeq };
  // The last message is foreign or corrupt: appends go after it, events continue the last valid commit.
  reportInvalid(handling, subject, last.seq, decoded.reason, decoded.error?.issues ?? [], 'skip', decoded.error?.code);
  let lastSeq = 0;
  for await (const commit of scanCommits(
    messages,
    ref,
    { start: 1, until: last.seq, afterSeq: 0, policy: 'skip', signal: undefined, expected: undefined },
    handling,
  ))
    lastSeq = commit.lastSeq;
  return { streamSeq: last.seq, lastSeq };
}

/**
 * The stream sequence of the commit holding event `seq` up to `tail` (binary search over direct
 * gets, O(log n) round trips), or undefined when no commit holds it.
 */
export async function locateCommit(
  messages: ConversationMessages,
  ref: ConversationRef,
  seq: number,
  tail: Tail,
): Promise<number | undefined> {
  if (seq < 1 || seq > tail.lastSeq) return undefined;
  const first = await nextPlaced(messages, ref, 1, tail.streamSeq);
  if (!first) return undefined;
  let low = first.seq;
  let high = tail.streamSeq;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    const probe = await nextPlaced(messages, ref, middle, high);
    if (probe && probe.firstSeq <= seq) low = probe.seq;
    else high = middle - 1;
  }
  return low;
}

/** The first commit at or after `from` (skipping foreign messages) up to `limit`. */
export async function nextPlaced(
  messages: ConversationMessages,
  ref: ConversationRef,
  from: number,
  limit: number,
): Promise<{ seq: number; firstSeq: number } | undefined> {
  let cursor = from;
  while (cursor <= limit) {
    const message = await messages.next(ref, cursor);
    if (!message || message.seq > limit) return undefined;
    const placement = placementOf(message);
    if (placement) return { seq: message.seq, firstSeq: placement.firstSeq };
    cursor = message.seq + 1;
  }
  return undefined;
}
