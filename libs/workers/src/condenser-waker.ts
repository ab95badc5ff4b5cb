import { TitleProgress, type NextWork } from '@flotilla/agent';
import type { Event } from '@flotilla/events';
import type { ConversationRef, Tail } from '@flotilla/log';
import { CondenserWakeupReason, setRecent, type ConversationStart, type WakeOptions } from '@flotilla/runtime';
import { IncrementalFold } from './incremental-fold.js';

/** Where wake-ups go (CondenserWakeups): resolves once the wake-up is stored. */
export type CondenserWakeupSink = {
  wake(ref: ConversationRef, reason: CondenserWakeupReason, at: number, options?: WakeOptions): Promise<void>;
};

export type CondenserWakerOptions<S = never> = {
  readonly wakeups: CondenserWakeupSink;
  /** Whether the spec in force at the end of these events (loaded from `start`) asks for titles (`titles.generate`). */
  readonly wantsTitles: (events: readonly Event[], start: ConversationStart<S> | undefined) => boolean;
  /** Conversations whose title wake-up this process remembers having put, at most. Default 10,000. */
  readonly maxRemembered?: number;
};

const key = (ref: ConversationRef): string => `${ref.tenant}.${ref.conversation}`;

/**
 * The step worker's side of the condenser's duties. The condenser is not delivered the log's
 * commits; a step worker decides from the log at every tail anyway, so it is the one that wakes
 * the condenser, before it acknowledges the commit it decided at (a wake-up is never lost; each
 * wake-up's id names the reason, the conversation and the stream sequence it was decided at, so
 * the same tail decided twice, by a redelivery or by two instances, is one wake-up):
 *
 * - a conversation waiting for a condensation: at each tail that still waits;
 * - a conversation owed a title (its spec wants titles, a user's first message is in, no title
 *   set or failed): once, when it becomes owed (this process remembers the first message it woke
 *   for). The condenser writes the title beside the run and appends it at once; a step decided
 *   before it is appended after it unchanged (`onlyTitles`), and the condenser keeps the wake-up
 *   until the title is in the log.
 *
 * A conversation loaded from a view checkpoint sees only the events after it: a title owed since
 * before it was woken for when it became owed.
 */
export class CondenserWaker<S = never> {
  readonly #titles = new IncrementalFold<TitleProgress, S>(
    () => new TitleProgress(),
    (progress, events) => progress.append(events),
  );
  readonly #titleWoken = new Map<string, number>();

  constructor(private readonly options: CondenserWakerOptions<S>) {}

  /**
   * Called at a tail the step worker decided on (`work`), before it acknowledges that commit;
   * `traceparent` reads that commit's trace (when a wake-up is put), which the condenser's work continues.
   */
  async decided(
    ref: ConversationRef,
    tail: Tail,
    events: readonly Event[],
    start: ConversationStart<S> | undefined,
    work: NextWork,
    traceparent: () => string,
  ): Promise<void> {
    if (work.kind === 'condense')
      await this.options.wakeups.wake(ref, CondenserWakeupReason.Condense, tail.streamSeq, {
        traceparent: traceparent(),
      });
    const title = this.#titles.of(events, start).work();
    if (
      title.kind !== 'owed' ||
      this.#titleWoken.get(key(ref)) === title.message.seq ||
      !this.options.wantsTitles(events, start)
    )
      return;
    await this.options.wakeups.wake(ref, CondenserWakeupReason.Title, tail.streamSeq, { traceparent: traceparent() });
    setRecent(this.#titleWoken, key(ref), title.message.seq, this.options.maxRemembered ?? 10_000);
  }
}
