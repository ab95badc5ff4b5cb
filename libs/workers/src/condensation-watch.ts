import type { ConversationRef, Tail } from '@flotilla/log';
import { setRecent, type Delivery } from '@flotilla/runtime';

/**
 * Where a conversation's title stands for the watch: `settled` (set, failed for good, or titles
 * are not generated), `no_message` (no user's text to title yet), `owed`.
 */
export type WatchedTitle = 'settled' | 'no_message' | 'owed';

type Known = {
  readonly streamSeq: number;
  readonly lastSeq: number;
  readonly requested: boolean;
  readonly title: WatchedTitle;
  /** An owed title could not land (a step was due, or the commit was not the tail): commits before this time (ms) are not tried again. */
  readonly titleHeldUntil?: number;
  /** How many times in a row the owed title could not land: each wait is twice the one before. */
  readonly titleHolds?: number;
};

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

export type CondensationWatchOptions = {
  /** Titles are generated: a conversation's first user message can make one owed. Default false. */
  readonly titles?: boolean;
  readonly maxConversations?: number;
  /**
   * After an owed title could not land, how long the commits of a conversation that only go on
   * with its run (no status change, no condensation) are let by without trying again: this at the
   * first miss, twice as long at each further one in a row, up to `titleRetryMaxMs`. Default 250 ms.
   */
  readonly titleRetryMs?: number;
  /**
   * The longest such wait. Default 30 s: a run that never rests (its every commit followed by
   * the next within milliseconds) costs a load about this often, not at every step.
   */
  readonly titleRetryMaxMs?: number;
  readonly now?: () => number;
};

/**
 * What the condenser knows of each conversation from its commits' headers alone: how far it has
 * seen it, whether a condensation request is open, and where its title stands. A condenser is
 * delivered every commit of every conversation, and almost none asks it for anything: a commit
 * that directly follows the last one it saw, with no request open and neither a request nor a
 * condensation in it, and with the title settled (or none owed and no message in the commit),
 * leaves nothing to do, so it needs no history (no load, no decode). A commit it cannot place (a
 * gap: another instance took commits, or this process is new to the conversation), or that
 * requests or answers a condensation, or may make a title owed, goes the whole way, and the
 * history it loads is noted here again.
 */
export class CondensationWatch {
  readonly #known = new Map<string, Known>();
  readonly #titles: boolean;
  readonly #maxConversations: number;
  readonly #titleRetryMs: number;
  readonly #titleRetryMaxMs: number;
  readonly #now: () => number;

  constructor(options: CondensationWatchOptions = {}) {
    this.#titles = options.titles ?? false;
    this.#maxConversations = options.maxConversations ?? 100_000;
    this.#titleRetryMs = options.titleRetryMs ?? 250;
    this.#titleRetryMaxMs = Math.max(this.#titleRetryMs, options.titleRetryMaxMs ?? 30_000);
    this.#now = options.now ?? Date.now;
  }

  /** True when the delivered commit's headers show that nothing can be due at it (and it is noted). */
  nothingDue(delivery: Delivery): boolean {
    const { ref } = delivery;
    const span = delivery.eventSpan();
    if (!ref || !span) return false;
    const types = delivery.eventTypes();
    if (types.includes('condensation_request') || types.includes('condensation')) return false;
    // a conversation's first commit follows nothing: nothing was requested, set or failed before it
    const first: Known = { streamSeq: 0, lastSeq: 0, requested: false, title: this.#titles ? 'no_message' : 'settled' };
    const known = this.#known.get(key(ref)) ?? (span.firstSeq === 1 ? first : undefined);
    if (!known || known.requested || span.firstSeq !== known.lastSeq + 1 || delivery.streamSeq <= known.streamSeq) return false;
    // a title that could not land is tried again after a while, or at a status change (the run may rest)
    const held = known.title === 'owed' && known.titleHeldUntil !== undefined && this.#now() < known.titleHeldUntil && !types.includes('state_change');
    if ((known.title === 'owed' && !held) || (known.title === 'no_message' && types.includes('message'))) return false;
    setRecent(this.#known, key(ref), { ...known, streamSeq: delivery.streamSeq, lastSeq: span.lastSeq }, this.#maxConversations);
    return true;
  }

  /**
   * The conversation's owed title could not land at the delivered commit (a step was due, or a later
   * commit had come): let its run's commits by for a while, longer at each miss in a row. The
   * commit counts as seen when it follows the last one noted (a commit that was not the tail is not
   * loaded, so nothing else notes it).
   */
  holdTitle(delivery: Delivery): void {
    const { ref } = delivery;
    const known = ref && this.#known.get(key(ref));
    if (!ref || known?.title !== 'owed') return;
    const span = delivery.eventSpan();
    const follows = span !== undefined && span.firstSeq === known.lastSeq + 1 && delivery.streamSeq > known.streamSeq;
    const position = follows ? { streamSeq: delivery.streamSeq, lastSeq: span.lastSeq } : {};
    const holds = (known.titleHolds ?? 0) + 1;
    const waitMs = Math.min(this.#titleRetryMaxMs, this.#titleRetryMs * 2 ** Math.min(holds - 1, 30));
    setRecent(this.#known, key(ref), { ...known, ...position, titleHeldUntil: this.#now() + waitMs, titleHolds: holds }, this.#maxConversations);
  }

  /** Notes what a conversation's history says at `tail` (a title still owed keeps its count of misses). */
  note(ref: ConversationRef, tail: Tail, requested: boolean, title: WatchedTitle = 'settled'): void {
    const watched = this.#titles ? title : 'settled';
    const holds = watched === 'owed' ? this.#known.get(key(ref))?.titleHolds : undefined;
    setRecent(this.#known, key(ref), { streamSeq: tail.streamSeq, lastSeq: tail.lastSeq, requested, title: watched, ...(holds ? { titleHolds: holds } : {}) }, this.#maxConversations);
  }
}
