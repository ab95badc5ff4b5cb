import { connectionInboxPrefix } from '@flotilla/bus';
import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** A delivered JetStream message, as the commit consumer uses it (nats.js's JsMsg is one too). */
export interface ConsumedMessage {
  readonly subject: string;
  /** The stream sequence. */
  readonly seq: number;
  readonly data: Uint8Array;
  readonly headers?: MsgHdrs | undefined;
  readonly info: { readonly deliveryCount: number; readonly pending: number; readonly timestampNanos: number };
  ack(): void;
  nak(millis?: number): void;
  working(): void;
}

export type BatchedPullOptions = {
  readonly nc: NatsConnection;
  readonly stream: string;
  readonly consumer: string;
  /** The pause after a pull that brought messages, before the next one: what accumulates meanwhile comes in one batch. */
  readonly intervalMs: number;
  /**
   * How many more messages the caller can take now (its free slots); a pull asks for no more. A
   * caller that says when slots free up (capacityFreed) gets a backlog without pauses.
   */
  readonly capacity: () => number;
  /** The lifetime of the standing pull that waits for the next message while the consumer is idle. Default 5 s. */
  readonly idleExpiresMs?: number;
  /** The JetStream API prefix. Default `$JS.API`. */
  readonly apiPrefix?: string;
  readonly logger: Logger;
};

const ACK = new TextEncoder().encode('+ACK');
const WORKING = new TextEncoder().encode('+WPI');
const NAK = new TextEncoder().encode('-NAK');
const MAX_BATCH = 1_000;
/**
 * How long a no-wait pull may go unanswered before the next one: its end lost in a reconnect, or
 * held open by the server (nats-server 2.9 leaves a no-wait pull open when the group's max ack
 * pending stops it mid-batch, and answers the next one with 408 "Requests Pending").
 */
const NO_WAIT_GUARD_MS = 2_000;
const RETRY_AFTER_REFUSAL_MS = 1_000;

/**
 * A durable pull consumer read in batches, for a group that need not hear of each message the
 * moment it lands (the projector): while messages keep coming, one `no_wait` pull
 * every `intervalMs` takes everything pending at once, so the process wakes once per batch
 * instead of once per message; while the consumer is idle, one standing pull for a single
 * message waits for the next, which is delivered at once.
 *
 * nats.js's `consume()` keeps a pull standing all the time, so every message is its own delivery
 * and wake-up; its `fetch()` cannot ask for what is pending without waiting a second.
 *
 * A backlog (a pull came back full and the server said more were pending) is pulled without the
 * pause: the next pull goes as soon as half the caller's capacity is free again (capacityFreed),
 * so a restarted group works through what it missed at the pace of its handlers, not one batch
 * per interval.
 *
 * Acks, naks and in-progress acks go to each message's reply subject as usual. A pull whose
 * answer was lost (the connection dropped) is given up after a guard time, or at once on
 * reconnect, and pulled again; a message that arrives for a pull given up is still delivered.
 */
export class BatchedPull implements AsyncIterable<ConsumedMessage> {
  readonly #options: BatchedPullOptions;
  readonly #inbox: string;
  readonly #subscription: Subscription;
  readonly #queue: ConsumedMessage[] = [];
  #wakeReader: (() => void) | undefined;
  #closed = false;
  #token = 0;
  /** The pull waiting for its end. */
  #current: Pull | undefined;
  #pulls = 0;
  readonly #loop: Promise<void>;
  #sleep: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  /** The caller's capacity at its largest (when it was idle). */
  #fullCapacity = 0;
  /** The free capacity a pause is waiting for, ended early by capacityFreed. */
  #awaitedCapacity = Number.POSITIVE_INFINITY;
  /** The pending count of the last message delivered: what the server still holds for the group. */
  #lastPending = 0;
  /** 1 while the message last handed out is still on its way to the caller. */
  #handedOut = 0;

  constructor(options: BatchedPullOptions) {
    if (!Number.isInteger(options.intervalMs) || options.intervalMs < 1)
      throw new RangeError(`intervalMs must be a whole number of milliseconds ≥ 1, not ${options.intervalMs}`);
    this.#options = options;
    this.#inbox = createInbox(connectionInboxPrefix(options.nc));
    this.#subscription = options.nc.subscribe(`${this.#inbox}.*`, {
      callback: (error, message) => (error ? undefined : this.#receive(message)),
    });
    this.#loop = this.#run();
    void this.#watchReconnects();
  }

  /** Pull requests sent so far. */
  get pulls(): number {
    return this.#pulls;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ConsumedMessage> {
    for (;;) {
      const next = this.#queue.shift();
      if (next) {
        // out of the queue, not yet counted by the caller's capacity: until it asks for the next one
        this.#handedOut = 1;
        yield next;
        this.#handedOut = 0;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wakeReader = resolve));
      this.#wakeReader = undefined;
    }
  }

  /** The caller freed some of its capacity: a pull waiting for room in a backlog goes when there is enough. */
  capacityFreed(): void {
    if (this.#free() >= this.#awaitedCapacity) this.#wakeSleep();
  }

  /** Stops pulling. Messages already received are still handed out; later ones are left to redelivery. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#current?.end();
    this.#wake();
    this.#wakeSleep();
    this.#subscription.unsubscribe();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const idleExpiresMs = this.#options.idleExpiresMs ?? 5_000;
    let backlog = false;
    while (!this.#closed) {
      // in a backlog, a batch of at least half the caller's capacity (or what there is after an interval)
      const enough = backlog ? Math.max(1, Math.floor(this.#fullCapacity / 2)) : 1;
      if (this.#free() < enough) {
        await this.#pause(this.#options.intervalMs, enough);
        if (this.#free() < 1) continue;
      }
      let outcome = await this.#pull({ batch: this.#free(), no_wait: true }, NO_WAIT_GUARD_MS);
      if (outcome === 'none') {
        // idle: one standing pull, for the message that starts the next burst
        outcome = await this.#pull({ batch: 1, expires: idleExpiresMs * 1_000_000 }, idleExpiresMs + NO_WAIT_GUARD_MS);
      }
      backlog = outcome === 'full';
      if (outcome === 'refused') await this.#pause(RETRY_AFTER_REFUSAL_MS);
      else if (outcome === 'some') await this.#pause(this.#options.intervalMs);
    }
  }

  /** Free capacity: what the caller can take, less what waits in the queue for it or is on its way. */
  #free(): number {
    const capacity = this.#options.capacity();
    if (capacity > this.#fullCapacity) this.#fullCapacity = capacity;
    return Math.min(MAX_BATCH, capacity - this.#queue.length - this.#handedOut);
  }

  /**
   * One pull request, answered when it ends: 'full' (all it asked for came, and the server holds
   * more), 'some' messages came, 'none', or the server 'refused' it.
   */
  #pull(
    request: { batch: number; no_wait?: true; expires?: number },
    guardMs: number,
  ): Promise<'full' | 'some' | 'none' | 'refused'> {
    if (this.#closed) return Promise.resolve('none');
    const { nc, stream, consumer } = this.#options;
    const token = ++this.#token;
    return new Promise((resolve) => {
      const guard = setTimeout(() => pull.end(), guardMs);
      const pull: Pull = {
        replyTo: `${this.#inbox}.${token}`,
        remaining: request.batch,
        received: 0,
        refused: false,
        end: () => {
          clearTimeout(guard);
          if (this.#current === pull) this.#current = undefined;
          resolve(
            pull.refused
              ? 'refused'
              : pull.received === 0
                ? 'none'
                : pull.remaining === 0 && this.#lastPending > 0
                  ? 'full'
                  : 'some',
          );
        },
      };
      this.#current = pull;
      this.#pulls += 1;
      try {
        nc.publish(
          `${this.#options.apiPrefix ?? '$JS.API'}.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
          JSON.stringify(request),
          { reply: pull.replyTo },
        );
      } catch (error) {
        this.#options.logger.warn({ err: error }, 'a pull request could not be sent; retrying');
        pull.refused = true;
        pull.end();
      }
    });
  }

  #receive(message: Msg): void {
    const reply = message.reply;
    if (reply && reply.startsWith('$JS.ACK.')) {
      const pulled = PulledMessage.from(message, this.#options.nc);
      if (!pulled) {
        this.#options.logger.warn(
          { subject: message.subject, reply },
          'a pulled message with an unreadable reply subject: left to redelivery',
        );
        return;
      }
      if (this.#closed) return; // not handed out: redelivered after the ack wait
      this.#lastPending = pulled.info.pending;
      this.#queue.push(pulled);
      this.#wake();
      // counted against the pull waiting now (a message a given-up pull still brings only ends it sooner)
      const current = this.#current;
      if (current) {
        current.received += 1;
        current.remaining -= 1;
        if (current.remaining === 0) current.end();
      }
      return;
    }
    // a status: the end of a pull (404 nothing pending, 408 expired), or a refusal
    const current = this.#current;
    if (!current || message.subject !== current.replyTo) return; // an earlier pull's late status
    const code = message.headers?.code ?? 0;
    if (code === 100) return; // a heartbeat
    if (code !== 404 && code !== 408) {
      this.#options.logger.warn(
        {
          code,
          description: message.headers?.description,
          stream: this.#options.stream,
          consumer: this.#options.consumer,
        },
        'JetStream refused a pull; retrying',
      );
      current.refused = true;
    }
    current.end();
  }

  async #watchReconnects(): Promise<void> {
    for await (const status of this.#options.nc.status()) {
      if (this.#closed) return;
      // a pull standing at the server before the connection dropped may be gone: pull again now
      if (status.type === 'reconnect') this.#current?.end();
    }
  }

  #wake(): void {
    this.#wakeReader?.();
  }

  /** Sleeps `ms`, or until `capacity` is free (capacityFreed) when given. */
  #pause(ms: number, capacity = Number.POSITIVE_INFINITY): Promise<void> {
    this.#awaitedCapacity = capacity;
    return new Promise((resolve) => {
      this.#sleep = { timer: setTimeout(() => this.#wakeSleep(), ms), resolve };
    });
  }

  #wakeSleep(): void {
    const sleep = this.#sleep;
    this.#sleep = undefined;
    this.#awaitedCapacity = Number.POSITIVE_INFINITY;
    if (!sleep) return;
    clearTimeout(sleep.timer);
    sleep.resolve();
  }
}

type Pull = {
  readonly replyTo: string;
  remaining: number;
  received: number;
  refused: boolean;
  /** Ends the pull (its batch is complete, the server ended it, or it is given up). */
  end(): void;
};

/** A message delivered to a pull request, acked through its reply subject. */
class PulledMessage implements ConsumedMessage {
  #settled = false;

  private constructor(
    private readonly message: Msg,
    private readonly nc: NatsConnection,
    readonly seq: number,
    readonly info: { readonly deliveryCount: number; readonly pending: number; readonly timestampNanos: number },
  ) {}

  /**
   * Reads the delivery from the reply subject: `$JS.ACK.<stream>.<consumer>.<delivered>.<stream
   * seq>.<consumer seq>.<nanos>.<pending>`, or the longer form with a domain and account hash first.
   */
  static from(message: Msg, nc: NatsConnection): PulledMessage | undefined {
    const tokens = message.reply!.split('.');
    const at = tokens.length === 9 ? 4 : tokens.length >= 11 ? 6 : -1;
    if (at < 0) return undefined;
    const deliveryCount = Number(tokens[at]);
    const seq = Number(tokens[at + 1]);
    const timestampNanos = Number(tokens[at + 3]);
    const pending = Number(tokens[at + 4]);
    // the timestamp (nanoseconds since the epoch) is beyond a double's exact integers: close enough
    if (![deliveryCount, seq, pending].every(Number.isSafeInteger) || !Number.isFinite(timestampNanos))
      return undefined;
    return new PulledMessage(message, nc, seq, { deliveryCount, pending, timestampNanos });
  }

  get subject(): string {
    return this.message.subject;
  }

  get data(): Uint8Array {
    return this.message.data;
  }

  get headers(): MsgHdrs | undefined {
    return this.message.headers;
  }

  ack(): void {
    this.#settle(ACK);
  }

  nak(millis?: number): void {
    this.#settle(
      millis && millis > 0 ? new TextEncoder().encode(`-NAK ${JSON.stringify({ delay: millis * 1_000_000 })}`) : NAK,
    );
  }

  working(): void {
    if (!this.#settled) this.nc.publish(this.message.reply!, WORKING);
  }

  #settle(payload: Uint8Array): void {
    if (this.#settled) return;
    this.#settled = true;
    this.nc.publish(this.message.reply!, payload);
  }
}
