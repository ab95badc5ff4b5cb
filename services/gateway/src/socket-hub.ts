import type { ConversationRef, EventLog } from '@flotilla/log';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { ConversationFeed } from './conversation-feed.js';

type Entry = { feed: Promise<ConversationFeed>; sockets: number; linger?: ReturnType<typeof setTimeout> };

/** A gateway's live feeds, one per conversation with sockets open, with a per-conversation socket limit. */
export class SocketHub {
  readonly #feeds = new Map<string, Entry>();
  #sockets = 0;

  constructor(
    readonly nc: NatsConnection,
    readonly log: EventLog,
    readonly logger: Logger,
    readonly maxPerConversation: number,
  ) {}

  get sockets(): number {
    return this.#sockets;
  }

  get conversations(): number {
    return this.#feeds.size;
  }

  /**
   * Take a socket slot on the conversation and its shared feed. Returns null when the limit is
   * reached. Call `release` exactly once when the socket closes.
   */
  async acquire(ref: ConversationRef): Promise<{ feed: ConversationFeed; release(): void } | null> {
    const key = `${ref.tenant}.${ref.conversation}`;
    let entry = this.#feeds.get(key);
    if (
      entry &&
      (await entry.feed.then(
        (feed) => feed.stopped,
        () => true,
      )) &&
      this.#feeds.get(key) === entry
    ) {
      this.#feeds.delete(key); // a failed feed is replaced by a fresh one
      entry = undefined;
    }
    entry ??= this.#feeds.get(key);
    if (entry && entry.sockets >= this.maxPerConversation) return null;
    if (!entry) {
      const feed = ConversationFeed.start(this.nc, this.log, ref, this.logger);
      entry = { feed, sockets: 0 };
      this.#feeds.set(key, entry);
      feed.catch(() => this.#feeds.get(key) === entry && this.#feeds.delete(key));
    }
    clearTimeout(entry.linger);
    entry.sockets += 1;
    this.#sockets += 1;
    const held = entry;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      held.sockets -= 1;
      this.#sockets -= 1;
      if (held.sockets > 0) return;
      // keep the feed a moment: a reconnecting client finds it warm
      held.linger = setTimeout(() => {
        if (held.sockets > 0 || this.#feeds.get(key) !== held) return;
        this.#feeds.delete(key);
        void held.feed.then(
          (feed) => feed.stop(),
          () => undefined,
        );
      }, 5_000);
      held.linger.unref();
    };
    try {
      return { feed: await held.feed, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  stop(): void {
    for (const entry of this.#feeds.values()) {
      clearTimeout(entry.linger);
      void entry.feed.then(
        (feed) => feed.stop(),
        () => undefined,
      );
    }
    this.#feeds.clear();
  }
}
