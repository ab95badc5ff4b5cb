import type { ConversationRef } from '@flotilla/log';
import { setRecent } from './recent-map.js';

/**
 * The highest stream sequence seen on each recent conversation's subject (bounded, most recently
 * noted kept). A delivered commit below it is not the tail, known without asking the log: draining
 * a backlog asks once per conversation instead of once per commit. Stream sequences only grow, so
 * a hint can be stale (too low: the log is asked) but never wrong the other way.
 */
export class TailHints {
  readonly #last = new Map<string, number>();

  constructor(private readonly capacity = 10_000) {}

  note(ref: ConversationRef, streamSeq: number): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    if ((this.#last.get(key) ?? 0) >= streamSeq) return;
    setRecent(this.#last, key, streamSeq, this.capacity);
  }

  /** True when a later message than `streamSeq` is known on the conversation's subject. */
  pastTail(ref: ConversationRef, streamSeq: number): boolean {
    return (this.#last.get(`${ref.tenant}.${ref.conversation}`) ?? 0) > streamSeq;
  }
}
