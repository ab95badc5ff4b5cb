import type { Event } from '@flotilla/events';
import { decodeCommit, type ConversationRef, type EventLog, type RawMessage, type Tail } from '@flotilla/log';

export type CachedConversation = { readonly events: readonly Event[]; readonly tail: Tail };

type Entry = { events: Event[]; tail: Tail };

/**
 * Recently used conversations' events, bounded by count and by total events. A load catches
 * up from the cached position, so a step on a long conversation reads only the new commits.
 */
export class ConversationCache {
  readonly #entries = new Map<string, Entry>();
  #events = 0;

  constructor(
    private readonly log: EventLog,
    private readonly maxConversations = 1_000,
    private readonly maxEvents = 500_000,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The cached conversation as it stands (no read); undefined when not cached. */
  peek(ref: ConversationRef): CachedConversation | undefined {
    return this.#entries.get(`${ref.tenant}.${ref.conversation}`);
  }

  /**
   * The conversation up to the subject's message `targetStreamSeq` (default: its current last
   * message), reading and validating only what the cache lacks. The returned tail is the
   * position to append after: the subject's last stream sequence and the last valid event seq.
   * `delivered`, the message at `targetStreamSeq` as a consumer delivered it, saves the read
   * when it is the commit that directly follows the cached events.
   */
  async load(ref: ConversationRef, targetStreamSeq?: number, delivered?: RawMessage): Promise<CachedConversation> {
    const key = `${ref.tenant}.${ref.conversation}`;
    const target = targetStreamSeq ?? (await this.log.lastStreamSeq(ref));
    let entry = this.#entries.get(key);
    if (entry) this.#entries.delete(key); // re-inserted below: most recently used last
    if (!entry || entry.tail.streamSeq > target) {
      this.#events -= entry?.events.length ?? 0;
      entry = { events: [], tail: { streamSeq: 0, lastSeq: 0 } };
    }
    if (entry.tail.streamSeq > 0 && entry.tail.streamSeq < target && delivered?.seq === target) {
      // the next commit, as delivered: validated like a read, appended without one
      const decoded = decodeCommit(delivered, ref);
      if (decoded.ok && decoded.commit.firstSeq === entry.tail.lastSeq + 1) {
        for (const event of decoded.commit.events) entry.events.push(event);
        this.#events += decoded.commit.events.length;
        entry.tail = { streamSeq: target, lastSeq: decoded.commit.lastSeq };
      }
    }
    if (entry.tail.streamSeq < target) {
      const from = entry.tail.streamSeq > 0 ? { afterStreamSeq: entry.tail.streamSeq } : { afterStreamSeq: 0 };
      for await (const commit of this.log.read(ref, { afterSeq: entry.tail.lastSeq, untilStreamSeq: target, ...from })) {
        for (const event of commit.events) if (event.seq > entry.tail.lastSeq) entry.events.push(event);
        this.#events += commit.lastSeq - Math.max(entry.tail.lastSeq, commit.firstSeq - 1);
        entry.tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
      }
      // foreign messages after the last commit still move the subject's tail
      entry.tail = { streamSeq: target, lastSeq: entry.tail.lastSeq };
    }
    this.#entries.set(key, entry);
    this.#evict();
    return entry;
  }

  /** Record our own append so the next load need not read it back. */
  appended(ref: ConversationRef, before: Tail, events: readonly Event[], after: Tail): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    const entry = this.#entries.get(key);
    if (!entry || entry.tail.streamSeq !== before.streamSeq) return;
    entry.events.push(...events);
    entry.tail = after;
    this.#events += events.length;
    this.#evict();
  }

  forget(ref: ConversationRef): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#events -= entry.events.length;
    this.#entries.delete(key);
  }

  #evict(): void {
    while (this.#entries.size > this.maxConversations || (this.#events > this.maxEvents && this.#entries.size > 1)) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) return;
      this.#events -= this.#entries.get(oldest)?.events.length ?? 0;
      this.#entries.delete(oldest);
    }
  }
}
