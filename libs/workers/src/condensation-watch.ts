import type { ConversationRef, Tail } from '@flotilla/log';
import { setRecent, type Delivery } from '@flotilla/runtime';

type Known = { readonly streamSeq: number; readonly lastSeq: number; readonly requested: boolean };

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/**
 * What the condenser knows of each conversation from its commits' headers alone: how far it has
 * seen it, and whether a condensation request is open. A condenser is delivered every commit of
 * every conversation, and almost none asks it for anything: a commit that directly follows the
 * last one it saw, with no request open and neither a request nor a condensation in it, leaves
 * nothing to condense, so it needs no history (no load, no decode). A commit it cannot place (a gap:
 * another instance took commits, or this process is new to the conversation), or that requests or
 * answers a condensation, goes the whole way, and the history it loads is noted here again.
 */
export class CondensationWatch {
  readonly #known = new Map<string, Known>();

  constructor(private readonly maxConversations = 100_000) {}

  /** True when the delivered commit's headers show that no condensation can be due at it (and it is noted). */
  nothingDue(delivery: Delivery): boolean {
    const { ref } = delivery;
    const span = delivery.eventSpan();
    if (!ref || !span) return false;
    const types = delivery.eventTypes();
    if (types.includes('condensation_request') || types.includes('condensation')) return false;
    // a conversation's first commit follows nothing: nothing was requested before it
    const known = this.#known.get(key(ref)) ?? (span.firstSeq === 1 ? { streamSeq: 0, lastSeq: 0, requested: false } : undefined);
    if (!known || known.requested || span.firstSeq !== known.lastSeq + 1 || delivery.streamSeq <= known.streamSeq) return false;
    setRecent(this.#known, key(ref), { streamSeq: delivery.streamSeq, lastSeq: span.lastSeq, requested: false }, this.maxConversations);
    return true;
  }

  /** Notes what a conversation's history says at `tail`. */
  note(ref: ConversationRef, tail: Tail, requested: boolean): void {
    setRecent(this.#known, key(ref), { streamSeq: tail.streamSeq, lastSeq: tail.lastSeq, requested }, this.maxConversations);
  }
}
