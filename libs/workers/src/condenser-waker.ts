import { TitleProgress, type NextWork } from '@flotilla/agent';
import type { Event } from '@flotilla/events';
import type { ConversationRef, Tail } from '@flotilla/log';
import { CondenserWakeupReason, setRecent, type ConversationStart, type WakeOptions } from '@flotilla/runtime';
import { IncrementalFold } from './incremental-fold.js';

/** Where wake-ups go (CondenserWakeups): resolves once the wake-up is stored. */
export type CondenserWakeupSink = { wake(ref: ConversationRef, reason: CondenserWakeupReason, at: number, options?: WakeOptions): Promise<void> };

export type CondenserWakerOptions<S = never> = {
  readonly wakeups: CondenserWakeupSink;
  /** Whether the spec in force at the end of these events (loaded from `start`) asks for titles (`titles.generate`). */
  readonly wantsTitles: (events: readonly Event[], start: ConversationStart<S> | undefined) => boolean;
  /** While a running conversation's title stays owed, its step's actions wake the condenser at most this often. Default 2 s. */
  readonly titleRetryMs?: number;
  /** Conversations this process remembers, at most. Default 10,000. */
  readonly maxRemembered?: number;
  readonly now?: () => number;
};

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/**
 * The step worker's side of the condenser's duties. The condenser is not delivered the log's
 * commits; a step worker decides from the log at every tail anyway, so it is the one that wakes
 * the condenser (each wake-up's id names the reason, the conversation and the stream sequence it
 * was decided at: the same tail decided twice is one wake-up):
 *
 * - a conversation waiting for a condensation: at each tail that still waits, before the commit
 *   is acknowledged (a wake-up is never lost);
 * - a conversation owed a title (its spec wants titles, a user's first message is in, no title
 *   set or failed): when it first becomes owed, so that the condenser writes it beside the first
 *   step, and at every tail decided with no step due (at rest, say), before the commit is
 *   acknowledged; and, best effort, right after a step's actions are appended (the tools run,
 *   no step is due), at most every `titleRetryMs`: a title is appended only where no step can be
 *   in flight, so these are the moments it can land in a run that does not rest. The condenser
 *   keeps a title it could not land in hand and acknowledges the wake-up; the next one lands it.
 *
 * A conversation loaded from a view checkpoint sees only the events after it: a title owed since
 * before it was woken for when it became owed.
 */
export class CondenserWaker<S = never> {
  readonly #titles = new IncrementalFold<TitleProgress, S>(
    () => new TitleProgress(),
    (progress, events) => progress.append(events),
  );
  /** The first message each conversation's title was first woken for, in this process. */
  readonly #titleWoken = new Map<string, number>();
  /** When a step's actions last woke each conversation's condenser for its title. */
  readonly #actionsWokeAt = new Map<string, number>();

  constructor(private readonly options: CondenserWakerOptions<S>) {}

  /**
   * Called at a tail the step worker decided on (`work`), before it acknowledges that commit;
   * `traceparent` reads that commit's trace (when a wake-up is put), which the condenser's work continues.
   */
  async decided(ref: ConversationRef, tail: Tail, events: readonly Event[], start: ConversationStart<S> | undefined, work: NextWork, traceparent: () => string): Promise<void> {
    if (work.kind === 'condense') await this.options.wakeups.wake(ref, CondenserWakeupReason.Condense, tail.streamSeq, { traceparent: traceparent() });
    const title = this.#titles.of(events, start).work();
    if (title.kind !== 'owed') return;
    const first = this.#titleWoken.get(key(ref)) !== title.message.seq;
    // a step (or the context it waits for, or a condensation) is due: the title could not land now
    if (!first && ['step', 'prepare', 'condense'].includes(work.kind)) return;
    if (!this.options.wantsTitles(events, start)) return;
    await this.options.wakeups.wake(ref, CondenserWakeupReason.Title, tail.streamSeq, { traceparent: traceparent() });
    setRecent(this.#titleWoken, key(ref), title.message.seq, this.options.maxRemembered ?? 10_000);
  }

  /**
   * Called once a step's commit of actions (`streamSeq`) is appended after `events`: while the
   * tools run no step is due, the moment for a title owed in a run that goes on. Best effort: a
   * wake-up that could not be put is left to the next step's actions or to the tail where the run
   * rests (`decided`).
   */
  async actionsAppended(ref: ConversationRef, streamSeq: number, events: readonly Event[], start: ConversationStart<S> | undefined, traceparent: () => string): Promise<void> {
    if (this.#titles.of(events, start).work().kind !== 'owed') return;
    const now = (this.options.now ?? Date.now)();
    if (now - (this.#actionsWokeAt.get(key(ref)) ?? Number.NEGATIVE_INFINITY) < (this.options.titleRetryMs ?? 2_000)) return;
    if (!this.options.wantsTitles(events, start)) return;
    setRecent(this.#actionsWokeAt, key(ref), now, this.options.maxRemembered ?? 10_000);
    await this.options.wakeups.wake(ref, CondenserWakeupReason.Title, streamSeq, { traceparent: traceparent() }).catch(() => undefined);
  }
}
