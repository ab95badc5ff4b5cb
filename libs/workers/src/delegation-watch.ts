import type { ConversationRef, Tail } from '@flotilla/log';
import { setRecent, type Delivery } from '@flotilla/runtime';

type Known = { readonly streamSeq: number; readonly lastSeq: number; readonly involved: boolean };

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/** Event types after which a conversation may owe the delegator something: a task call, or being (or starting) a sub-agent. */
const DELEGATION_TYPES: readonly string[] = ['action', 'subagent_task', 'subagent_started'];

/**
 * What the delegator knows of each conversation from its commits' headers alone: how far it has
 * seen it and whether it is involved in a delegation (a parent with task calls open, or a child).
 * The delegator is delivered every commit, and almost every conversation is neither: a commit that
 * directly follows the last one it saw of a conversation that is not involved, and that holds no
 * action and no sub-agent event, owes it nothing (no load, no decode). Anything else goes the whole
 * way, and what the history says is noted here again.
 */
export class DelegationWatch {
  readonly #known = new Map<string, Known>();
  readonly #maxConversations: number;

  constructor(options: { readonly maxConversations?: number } = {}) {
    this.#maxConversations = options.maxConversations ?? 100_000;
  }

  /** True when the delivered commit's headers show it owes the delegator nothing (and it is noted). */
  nothingDue(delivery: Delivery): boolean {
    const { ref } = delivery;
    const span = delivery.eventSpan();
    if (!ref || !span) return false;
    const types = delivery.eventTypes();
    if (DELEGATION_TYPES.some((type) => types.includes(type))) return false;
    // a conversation's first commit follows nothing: without a subagent_task it is no child
    const known =
      this.#known.get(key(ref)) ?? (span.firstSeq === 1 ? { streamSeq: 0, lastSeq: 0, involved: false } : undefined);
    if (!known || known.involved || span.firstSeq !== known.lastSeq + 1 || delivery.streamSeq <= known.streamSeq)
      return false;
    setRecent(
      this.#known,
      key(ref),
      { streamSeq: delivery.streamSeq, lastSeq: span.lastSeq, involved: false },
      this.#maxConversations,
    );
    return true;
  }

  /** Notes what a conversation's history says at `tail`. */
  note(ref: ConversationRef, tail: Tail, involved: boolean): void {
    setRecent(
      this.#known,
      key(ref),
      { streamSeq: tail.streamSeq, lastSeq: tail.lastSeq, involved },
      this.#maxConversations,
    );
  }
}
