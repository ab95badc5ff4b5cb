import type { ConversationRef } from '@flotilla/log';

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
    const known = this.#last.get(key);
    if (known !== undefined) {
      if (known >= streamSeq) return;
      this.#last.delete(key);
    }
    this.#last.set(key, streamSeq);
    if (this.#last.size > this.capacity) this.#last.delete(this.#last.keys().next().value!);
  }

  /** True when a later message than `streamSeq` is known on the conversation's subject. */
  pastTail(ref: ConversationRef, streamSeq: number): boolean {
    return (this.#last.get(`${ref.tenant}.${ref.conversation}`) ?? 0) > streamSeq;
  }

  forget(ref: ConversationRef): void {
    this.#last.delete(`${ref.tenant}.${ref.conversation}`);
  }
}
