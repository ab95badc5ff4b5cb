import { ApiError } from './api-error.js';

type Line = { tail: Promise<void>; waiting: number };

/**
 * One command at a time per conversation on this gateway, in the order they arrived. Commands on
 * one conversation decide from its tail and append expecting it: run side by side, all but one
 * of them conflict, read again and decide again, so a burst of N costs ~N² reads and ends in 503s
 * (a flood of 1,000 messages got 882 of them). In a line, each finds the tail its predecessor
 * left: no conflicts among this gateway's own commands, and the order they were accepted in is
 * the order they reached the gateway. Conflicts with other writers (workers, other gateways) are
 * still resolved by reading again.
 *
 * A line holds at most `limit` bounded commands (messages); past that they are refused with 429
 * `rate_limited` and Retry-After, rather than queued without end. Unbounded ones (pause,
 * interrupt, approve…) always take their place in the line. 0 = no limit.
 */
export class CommandQueue {
  readonly #lines = new Map<string, Line>();

  constructor(readonly limit: number) {}

  /** Commands waiting or running on `key`. */
  waiting(key: string): number {
    return this.#lines.get(key)?.waiting ?? 0;
  }

  run<T>(key: string, work: () => Promise<T>, options: { bounded?: boolean } = {}): Promise<T> {
    let line = this.#lines.get(key);
    if (options.bounded && this.limit > 0 && (line?.waiting ?? 0) >= this.limit) {
      return Promise.reject(
        new ApiError(
          429,
          'rate_limited',
          `Too many messages are waiting for this conversation (at most ${this.limit}); retry after the given delay.`,
          undefined,
          1,
        ),
      );
    }
    if (!line) this.#lines.set(key, (line = { tail: Promise.resolve(), waiting: 0 }));
    const current = line;
    current.waiting += 1;
    const result = current.tail.then(work);
    current.tail = result.then(
      () => this.#done(key, current),
      () => this.#done(key, current),
    );
    return result;
  }

  #done(key: string, line: Line): void {
    line.waiting -= 1;
    if (line.waiting === 0 && this.#lines.get(key) === line) this.#lines.delete(key);
  }
}
