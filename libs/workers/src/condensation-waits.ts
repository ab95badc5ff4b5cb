import type { ConversationRef } from '@flotilla/log';

type Waiting = { readonly ref: ConversationRef; readonly streamSeq: number; readonly since: number; warned: boolean };

export type CondensationWaitsOptions = {
  /** A wait longer than this is checked against the log and, if real, reported once. Default 60 s. */
  readonly warnAfterMs?: number;
  /** Conversations tracked at most. Default 10,000. */
  readonly maxConversations?: number;
};

/** A wait past `warnAfterMs`: the conversation's last message was `streamSeq` when it began. */
export type OverdueWait = {
  readonly ref: ConversationRef;
  readonly streamSeq: number;
  readonly waitedMs: number;
  readonly warned: boolean;
};

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/**
 * The conversations a step worker found waiting for a condensation, and since when. At its hard
 * limit a step asks for a condensation and the conversation then waits: only the condenser
 * service answers. Deployed without one, such conversations would stop without a word; a sweep
 * of this makes it visible (the step worker exports the number waiting and the longest wait, and
 * logs each wait it confirmed once).
 *
 * A wait is noted from a delivered commit; the answer may be delivered to another instance of the
 * group, so a wait past `warnAfterMs` is checked against the log (`overdue`, then `settled` or
 * `confirm`) before it counts as real.
 */
export class CondensationWaits {
  readonly #waiting = new Map<string, Waiting>();
  readonly #warnAfterMs: number;
  readonly #max: number;

  constructor(options: CondensationWaitsOptions = {}) {
    this.#warnAfterMs = options.warnAfterMs ?? 60_000;
    this.#max = Math.max(1, options.maxConversations ?? 10_000);
  }

  /** The conversation, whose last message is `streamSeq`, waits for a condensation. */
  waiting(ref: ConversationRef, streamSeq: number, now = Date.now()): void {
    const id = key(ref);
    if (this.#waiting.get(id)?.streamSeq === streamSeq || (!this.#waiting.has(id) && this.#waiting.size >= this.#max))
      return;
    this.#waiting.set(id, { ref, streamSeq, since: now, warned: false });
  }

  /** The conversation no longer waits (a condensation landed, or it moved on otherwise). */
  settled(ref: ConversationRef): void {
    this.#waiting.delete(key(ref));
  }

  /** Waits older than `warnAfterMs`, oldest first, at most `limit`: check each against the log. */
  overdue(now = Date.now(), limit = 100): OverdueWait[] {
    const found: OverdueWait[] = [];
    for (const entry of this.#waiting.values()) {
      if (now - entry.since >= this.#warnAfterMs)
        found.push({ ref: entry.ref, streamSeq: entry.streamSeq, waitedMs: now - entry.since, warned: entry.warned });
    }
    return found.sort((a, b) => b.waitedMs - a.waitedMs).slice(0, limit);
  }

  /** The log confirms the wait: true the first time (report it), false after. */
  confirm(ref: ConversationRef): boolean {
    const entry = this.#waiting.get(key(ref));
    if (!entry || entry.warned) return false;
    entry.warned = true;
    return true;
  }

  /** Conversations waiting now, and the longest wait in ms (0 when none). */
  report(now = Date.now()): { readonly waiting: number; readonly oldestMs: number } {
    let oldest = now;
    for (const entry of this.#waiting.values()) oldest = Math.min(oldest, entry.since);
    return { waiting: this.#waiting.size, oldestMs: now - oldest };
  }
}
