import { whenAborted } from './when-aborted.js';

type Waiter = { readonly seq: number; readonly wake: () => void };

/**
 * Per conversation, the highest stream sequence delivered to this process while any of its commits
 * are held or handled here, and the handlers waiting for a later one: what a delivery's
 * `laterQueued` and `laterQueuedWithin` answer from.
 */
export class QueuedCommits {
  readonly #newest = new Map<string, number>();
  readonly #waiters = new Map<string, Set<Waiter>>();

  constructor(private readonly shutdown: AbortSignal) {}

  /** A commit of the conversation `key` came (it may wait for a slot: it is queued all the same). */
  arrived(key: string, seq: number): void {
    this.#newest.set(key, Math.max(this.#newest.get(key) ?? 0, seq));
    for (const waiter of this.#waiters.get(key) ?? []) if (seq > waiter.seq) waiter.wake();
  }

  /** The conversation has no commit held or handled here any more. */
  forget(key: string): void {
    this.#newest.delete(key);
  }

  /** Whether a commit of `key` later than `seq` is queued here (a higher sequence: a redelivered older commit can queue too). */
  later(key: string, seq: number): boolean {
    return (this.#newest.get(key) ?? 0) > seq;
  }

  /** Resolves true as soon as a commit of `key` later than `seq` is queued here, false after `ms` or on shutdown. */
  laterWithin(key: string, seq: number, ms: number): Promise<boolean> {
    if (this.later(key, seq)) return Promise.resolve(true);
    if (ms <= 0 || this.shutdown.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(key);
      if (!waiters) this.#waiters.set(key, (waiters = new Set()));
      const all = waiters;
      const finish = (later: boolean): void => {
        clearTimeout(timer);
        cancel();
        all.delete(waiter);
        if (all.size === 0 && this.#waiters.get(key) === all) this.#waiters.delete(key);
        resolve(later);
      };
      const waiter: Waiter = { seq, wake: () => finish(true) };
      all.add(waiter);
      const timer = setTimeout(() => finish(false), ms);
      const cancel = whenAborted(this.shutdown, () => finish(false));
    });
  }
}
