import type { ConversationRef, EventLog, StoredCommit, Tail } from '@flotilla/log';
import { deltaSubject, DEFAULT_SIGNAL_ROOT } from '@flotilla/runtime';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** One event ready to send: its seq and its frame, serialised and encoded once for every subscriber. */
export type ReadyEvent = { readonly seq: number; readonly frame: Buffer };

export type FeedListener = {
  /** New events are in the feed (read them with `since`). */
  wake(): void;
  /** A transient frame (token delta), already serialised and encoded. */
  transient(frame: Buffer): void;
  /** The feed broke (NATS gone for good): the listener must close its socket. */
  failed(error: Error): void;
};

const RING_EVENTS = 1_024;

/**
 * A gateway's one live reader of a conversation, shared by all its sockets on that
 * conversation: a follow of the log from the tail it found at start (EventLog.follow: a core
 * subscription wakes it, direct gets read the commits, no consumer), a ring of recent events
 * (frames serialised once), and the conversation's token deltas. Sockets that fall behind the
 * ring read the log themselves.
 */
export class ConversationFeed {
  readonly #listeners = new Set<FeedListener>();
  readonly #ring: ReadyEvent[] = [];
  readonly #abort = new AbortController();
  #tail: Tail = { streamSeq: 0, lastSeq: 0 };
  #deltas: Subscription | undefined;

  private constructor(
    readonly ref: ConversationRef,
    readonly log: EventLog,
    readonly logger: Logger,
  ) {}

  static async start(
    nc: NatsConnection,
    log: EventLog,
    ref: ConversationRef,
    logger: Logger,
  ): Promise<ConversationFeed> {
    const feed = new ConversationFeed(ref, log, logger);
    feed.#tail = await log.tail(ref);
    feed.#deltas = nc.subscribe(deltaSubject(DEFAULT_SIGNAL_ROOT, ref), {
      callback: (_error, message) => feed.#onDelta(message.string()),
    });
    void feed.#follow();
    return feed;
  }

  /** The last event the feed has seen. */
  get tail(): Tail {
    return this.#tail;
  }

  /** True once the feed stopped (closed, or failed): a new feed must be started. */
  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  add(listener: FeedListener): void {
    this.#listeners.add(listener);
  }

  remove(listener: FeedListener): void {
    this.#listeners.delete(listener);
  }

  /** Events after `seq` held in the ring, or undefined when the ring no longer reaches back that far. */
  since(seq: number): readonly ReadyEvent[] | undefined {
    if (seq >= this.#tail.lastSeq) return [];
    const first = this.#ring[0];
    if (!first || first.seq > seq + 1) return undefined;
    return this.#ring.slice(seq + 1 - first.seq);
  }

  stop(): void {
    this.#abort.abort();
    this.#deltas?.unsubscribe();
    this.#listeners.clear();
  }

  async #follow(): Promise<void> {
    try {
      const start = this.#tail;
      for await (const commit of this.log.follow(this.ref, {
        afterSeq: start.lastSeq,
        afterStreamSeq: start.streamSeq,
        signal: this.#abort.signal,
      })) {
        this.#append(commit);
      }
    } catch (error) {
      if (this.#abort.signal.aborted) return;
      this.logger.warn(
        { err: error, conversation: this.ref.conversation, tenant: this.ref.tenant },
        'live feed failed',
      );
      for (const listener of this.#listeners) listener.failed(error as Error);
      this.stop();
    }
  }

  #append(commit: StoredCommit): void {
    for (const event of commit.events) {
      if (event.seq <= this.#tail.lastSeq) continue;
      this.#ring.push({ seq: event.seq, frame: Buffer.from(JSON.stringify({ type: 'event', seq: event.seq, event })) });
    }
    if (this.#ring.length > RING_EVENTS) this.#ring.splice(0, this.#ring.length - RING_EVENTS);
    this.#tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    for (const listener of this.#listeners) listener.wake();
  }

  #onDelta(raw: string): void {
    let delta: { type?: unknown; text?: unknown; argumentsDelta?: unknown };
    try {
      delta = JSON.parse(raw) as typeof delta;
    } catch {
      return;
    }
    const text = delta.type === 'tool_call' ? delta.argumentsDelta : delta.type === 'restart' ? '' : delta.text;
    if (
      (delta.type !== 'text' && delta.type !== 'reasoning' && delta.type !== 'tool_call' && delta.type !== 'restart') ||
      typeof text !== 'string'
    )
      return;
    const frame = Buffer.from(JSON.stringify({ type: 'delta', kind: delta.type, text }));
    for (const listener of this.#listeners) listener.transient(frame);
  }
}
