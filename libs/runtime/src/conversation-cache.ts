import type { Event } from '@flotilla/events';
import {
  decodeCommit,
  placementOf,
  type ConversationRef,
  type EventLog,
  type RawMessage,
  type StoredCommit,
  type Tail,
} from '@flotilla/log';
import { loadConversation, type CheckpointReading, type ConversationStart } from './conversation-load.js';
import { TailHints } from './tail-hints.js';

/**
 * A conversation as cached: its events up to `tail`, from the start of the log, or (`start`) from
 * a little before a checkpoint whose state stands for everything earlier.
 */
export type CachedConversation<S = never> = {
  readonly events: readonly Event[];
  readonly tail: Tail;
  readonly start?: ConversationStart<S>;
};

/**
 * `ahead`: commits delivered to this process after a gap (commits another instance of the
 * service was delivered), in stream order, held so that a catch-up reads only the gap.
 */
type Entry<S> = { events: Event[]; tail: Tail; start?: ConversationStart<S>; ahead?: StoredCommit[] };

/** Commits held past a gap per conversation (the earliest kept: they are needed first). */
const MAX_AHEAD = 16;

export type ConversationCacheOptions<S> = {
  /**
   * Load a conversation that is not cached from its checkpoint when one fits (see
   * `loadConversation`): its events then begin a little before the checkpoint, and `start` holds
   * its state. A caller that folds the events must resume its folds from `start`.
   */
  readonly checkpoints?: CheckpointReading<S>;
  /**
   * Look for a checkpoint only when the delivered commit (its headers) says the conversation has at
   * least this many events (default 200): a shorter one is read whole faster than a checkpoint is
   * looked up and checked.
   */
  readonly checkpointsFrom?: number;
  /** Told of every load of a conversation that was not cached: from its checkpoint, or from the whole log. */
  readonly onColdLoad?: (source: 'checkpoint' | 'log', events: number) => void;
};

/**
 * Recently used conversations' events, bounded by count and by total events. A load catches
 * up from the cached position, so a step on a long conversation reads only the new commits.
 */
export class ConversationCache<S = never> {
  readonly #entries = new Map<string, Entry<S>>();
  #events = 0;

  /** The last stream sequence seen per conversation, kept longer than the events (see TailHints). */
  readonly tails = new TailHints();
  /** Loads of a whole conversation in progress, and loads waiting for a turn. */
  #coldLoads = 0;
  readonly #coldWaiters: (() => void)[] = [];

  constructor(
    private readonly log: EventLog,
    private readonly maxConversations = 1_000,
    private readonly maxEvents = 500_000,
    /**
     * Whole-conversation loads at once. Draining a backlog reaches many conversations' last
     * commits together; reading them all at once would hold every one in memory at the same time.
     */
    private readonly maxColdLoads = 8,
    private readonly options: ConversationCacheOptions<S> = {},
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The cached conversation as it stands (no read); undefined when not cached. */
  peek(ref: ConversationRef): CachedConversation<S> | undefined {
    return this.#entries.get(`${ref.tenant}.${ref.conversation}`);
  }

  /**
   * The conversation up to the subject's message `targetStreamSeq` (default: its current last
   * message), reading and validating only what the cache lacks. The returned tail is the
   * position to append after: the subject's last stream sequence and the last valid event seq.
   * `delivered`, the message at `targetStreamSeq` as a consumer delivered it, saves the read
   * when it is the commit that directly follows the cached events.
   */
  async load(ref: ConversationRef, targetStreamSeq?: number, delivered?: RawMessage): Promise<CachedConversation<S>> {
    const key = `${ref.tenant}.${ref.conversation}`;
    const target = targetStreamSeq ?? (await this.log.lastStreamSeq(ref));
    this.tails.note(ref, target);
    let entry = this.#entries.get(key);
    if (entry) this.#entries.delete(key); // re-inserted below: most recently used last
    if (!entry || entry.tail.streamSeq > target) {
      this.#events -= entry ? sizeOf(entry) : 0;
      entry = { events: [], tail: { streamSeq: 0, lastSeq: 0 } };
    }
    if (delivered?.seq === target) this.#extend(ref, entry, delivered, target);
    if (entry.tail.streamSeq === 0 && target > 0) {
      await this.#coldTurn();
      try {
        const loaded = await loadConversation(
          this.log,
          ref,
          target,
          this.#worthACheckpoint(delivered, target) ? this.options.checkpoints : undefined,
        );
        entry = loaded.start
          ? { events: loaded.events, tail: loaded.tail, start: loaded.start }
          : { events: loaded.events, tail: loaded.tail };
        this.#events += loaded.events.length;
        this.options.onColdLoad?.(loaded.start ? 'checkpoint' : 'log', loaded.events.length);
      } finally {
        this.#coldDone();
      }
    } else if (entry.tail.streamSeq < target) {
      await this.#catchUp(ref, entry, target);
    }
    this.#entries.set(key, entry);
    this.#evict();
    return entry;
  }

  #worthACheckpoint(delivered: RawMessage | undefined, target: number): boolean {
    if (this.options.checkpoints === undefined) return false;
    const placement = delivered?.seq === target ? placementOf(delivered) : undefined;
    return placement === undefined || placement.firstSeq + placement.count - 1 >= (this.options.checkpointsFrom ?? 200);
  }

  async #coldTurn(): Promise<void> {
    if (this.#coldLoads < this.maxColdLoads) {
      this.#coldLoads += 1;
      return;
    }
    await new Promise<void>((resolve) => this.#coldWaiters.push(resolve));
  }

  #coldDone(): void {
    const next = this.#coldWaiters.shift();
    if (next) next();
    else this.#coldLoads -= 1;
  }

  /**
   * Reads what the cache lacks up to `target`: only the gaps before commits held ahead (each read
   * stops at the commit that the held one continues), then the rest.
   */
  async #catchUp(ref: ConversationRef, entry: Entry<S>, target: number): Promise<void> {
    this.#applyAhead(entry, target);
    while (entry.tail.streamSeq < target) {
      const held = entry.ahead?.[0];
      const next = held !== undefined && held.streamSeq <= target ? held : undefined;
      await this.log.forEachCommit(
        ref,
        {
          afterSeq: entry.tail.lastSeq,
          afterStreamSeq: entry.tail.streamSeq,
          untilStreamSeq: next ? next.streamSeq - 1 : target,
        },
        (commit) => {
          this.#append(entry, commit);
          return next === undefined || commit.lastSeq + 1 !== next.firstSeq;
        },
      );
      if (next === undefined) break;
      const before = entry.tail.streamSeq;
      this.#applyAhead(entry, target);
      // what lies before the held commits is no commit leading to them: read on from the log instead
      if (entry.tail.streamSeq === before) this.#dropAhead(entry);
    }
    // foreign messages after the last commit still move the subject's tail
    entry.tail = { streamSeq: target, lastSeq: entry.tail.lastSeq };
  }

  /** Appends the held commits that continue the cached events, up to stream sequence `upTo`; drops those already passed. */
  #applyAhead(entry: Entry<S>, upTo: number): void {
    const ahead = entry.ahead;
    if (ahead === undefined) return;
    while (ahead.length > 0) {
      const next = ahead[0]!;
      if (next.streamSeq > upTo) break;
      const passed = next.streamSeq <= entry.tail.streamSeq || next.lastSeq <= entry.tail.lastSeq;
      if (!passed && next.firstSeq !== entry.tail.lastSeq + 1) break;
      ahead.shift();
      this.#events -= next.events.length;
      if (!passed) this.#append(entry, next);
    }
    if (ahead.length === 0) delete entry.ahead;
  }

  #holdAhead(entry: Entry<S>, commit: StoredCommit): void {
    const ahead = (entry.ahead ??= []);
    const at = ahead.findIndex((held) => held.streamSeq >= commit.streamSeq);
    if (at !== -1 && ahead[at]!.streamSeq === commit.streamSeq) return;
    ahead.splice(at === -1 ? ahead.length : at, 0, commit);
    this.#events += commit.events.length;
    if (ahead.length > MAX_AHEAD) this.#events -= ahead.pop()!.events.length;
  }

  #dropAhead(entry: Entry<S>): void {
    for (const held of entry.ahead ?? []) this.#events -= held.events.length;
    delete entry.ahead;
  }

  /** Appends the commit's events after the cached ones (a read's first commit may hold some already). */
  #append(entry: Entry<S>, commit: StoredCommit): void {
    for (const event of commit.events) if (event.seq > entry.tail.lastSeq) entry.events.push(event);
    this.#events += commit.lastSeq - Math.max(entry.tail.lastSeq, commit.firstSeq - 1);
    entry.tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
  }

  /**
   * Brings the cached conversation up to a delivered message without reading the log, when that
   * message is the commit right after the cached events (or is already cached). False when the
   * conversation is not cached or the message does not directly continue it; a commit after a
   * gap is held, and the catch-up that the next load makes reads only the gap.
   */
  extend(ref: ConversationRef, delivered: RawMessage): boolean {
    const entry = this.#entries.get(`${ref.tenant}.${ref.conversation}`);
    // commits held here were delivered here: the cache may pass the delivered one with them
    return entry !== undefined && this.#extend(ref, entry, delivered, Number.POSITIVE_INFINITY);
  }

  /** Appends the delivered commit when it continues the cached events, then the held ones that follow it up to `upTo`; else holds it. */
  #extend(ref: ConversationRef, entry: Entry<S>, delivered: RawMessage, upTo: number): boolean {
    if (entry.tail.streamSeq === delivered.seq) return true;
    if (entry.tail.streamSeq === 0 || entry.tail.streamSeq > delivered.seq) return false;
    if (entry.ahead?.some((held) => held.streamSeq === delivered.seq)) return false;
    // the commit as delivered: validated like a read, appended (or held) without one
    const decoded = decodeCommit(delivered, ref);
    if (!decoded.ok || decoded.commit.firstSeq <= entry.tail.lastSeq) return false;
    if (decoded.commit.firstSeq === entry.tail.lastSeq + 1) {
      this.#append(entry, decoded.commit);
      this.#applyAhead(entry, upTo);
    } else {
      this.#holdAhead(entry, decoded.commit);
    }
    this.#evict();
    return entry.tail.streamSeq >= delivered.seq;
  }

  /** Record our own append so the next load need not read it back. */
  appended(ref: ConversationRef, before: Tail, events: readonly Event[], after: Tail): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    const entry = this.#entries.get(key);
    this.tails.note(ref, after.streamSeq);
    if (!entry || entry.tail.streamSeq !== before.streamSeq) return;
    entry.events.push(...events);
    entry.tail = after;
    this.#events += events.length;
    this.#applyAhead(entry, after.streamSeq);
    this.#evict();
  }

  forget(ref: ConversationRef): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#events -= sizeOf(entry);
    this.#entries.delete(key);
  }

  #evict(): void {
    while (this.#entries.size > this.maxConversations || (this.#events > this.maxEvents && this.#entries.size > 1)) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) return;
      const entry = this.#entries.get(oldest);
      this.#events -= entry ? sizeOf(entry) : 0;
      this.#entries.delete(oldest);
    }
  }
}

/** The events an entry holds, its commits held ahead included (what the cache's bound counts). */
function sizeOf(entry: Entry<unknown>): number {
  let size = entry.events.length;
  for (const held of entry.ahead ?? []) size += held.events.length;
  return size;
}
