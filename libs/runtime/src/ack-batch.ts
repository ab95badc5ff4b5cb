import type { ConsumedMessage } from './batched-pull.js';

/**
 * Acks of handled commits, held briefly and sent together: each write to the socket costs a
 * system call and a wake-up of nats-server (in the step cycle, holding them took the step
 * worker from ~3 writes per cycle to 1, and 2–4 % off every process's CPU). Acks
 * go out at the latest `holdMs` after the first was held, or earlier with the process's next
 * append (`flush` right before it puts both in the same write, since nats.js writes once per
 * microtask checkpoint). With `holdMs` 0 they go at the end of the event loop's turn. At most
 * `maxHeld` wait: a group working through a backlog handles thousands of commits a second, and
 * acks held longer would count against its max ack pending (where nats-server 2.9 leaves a
 * no-wait pull open, BatchedPull).
 *
 * A late ack is safe: a process that dies holding acks has those commits redelivered, and
 * handlers decide from the log, as for any redelivery. `holdMs` must stay far below the
 * consumer's ack wait.
 */
export class AckBatch {
  #pending: ConsumedMessage[] = [];
  #timer: NodeJS.Timeout | NodeJS.Immediate | undefined;

  constructor(
    readonly holdMs: number,
    readonly maxHeld = 64,
  ) {
    if (!Number.isInteger(holdMs) || holdMs < 0)
      throw new RangeError(`holdMs must be a whole number of milliseconds, not ${holdMs}`);
    if (!Number.isInteger(maxHeld) || maxHeld < 1)
      throw new RangeError(`maxHeld must be a whole number of at least 1, not ${maxHeld}`);
  }

  get held(): number {
    return this.#pending.length;
  }

  add(message: ConsumedMessage): void {
    this.#pending.push(message);
    if (this.#pending.length >= this.maxHeld) return this.flush();
    if (this.#timer !== undefined) return;
    this.#timer = this.holdMs === 0 ? setImmediate(() => this.flush()) : setTimeout(() => this.flush(), this.holdMs);
  }

  /** Sends every held ack now (in the write of whatever else this turn publishes). */
  flush(): void {
    if (this.#timer !== undefined) {
      if (this.holdMs === 0) clearImmediate(this.#timer as NodeJS.Immediate);
      else clearTimeout(this.#timer as NodeJS.Timeout);
      this.#timer = undefined;
    }
    if (this.#pending.length === 0) return;
    const pending = this.#pending;
    this.#pending = [];
    for (const message of pending) message.ack();
  }
}
