import { checkpointFolds, foldLoaded, stepLookback, type ConversationCheckpoint } from '@flotilla/agent';
import type { ConversationRef, EventLog } from '@flotilla/log';
import {
  loadConversation,
  setRecent,
  type CheckpointStore,
  type CommitHandler,
  type CommitPlace,
  type Delivery,
} from '@flotilla/runtime';

export type CheckpointWriterOptions = {
  /**
   * A checkpoint is also written when this many events came after the last one, condensation or
   * not (default 1,000): a conversation that is never condensed is then loaded from its view too.
   */
  readonly everyEvents?: number;
  /** Conversations whose last checkpoint position is remembered (default 10,000). */
  readonly cacheSize?: number;
};

/** What a checkpoint writer did with a commit. */
export type CheckpointOutcome = 'not_due' | 'written' | 'stored_already' | 'no_system_prompt' | 'not_stored';

/** What a writer needs of a commit: where it is, and its event types (from its headers). */
export type CommitNote = {
  readonly streamSeq: number;
  readonly lastSeq: number;
  readonly eventTypes: readonly string[];
};

/**
 * Writes view checkpoints (docs/architecture.md, "View checkpoints"): after a commit that holds
 * a condensation, and after every `everyEvents` events, the state a step folds from the history
 * (its view, what the conversation owes, its run), read from the previous checkpoint and the log
 * after it, stored with compare-and-set. A checkpoint is derived and optional: one that is not
 * written, is lost or is too large to store only makes the next cold load read more of the log.
 */
export class CheckpointWriter {
  readonly #everyEvents: number;
  readonly #cacheSize: number;
  /**
   * Per conversation, as this writer last saw it: the last event seq of its stored checkpoint, and
   * whether its view was too large to store (then only a condensation makes the next one due).
   */
  readonly #known = new Map<string, { readonly lastSeq: number; readonly tooLarge: boolean }>();

  constructor(
    private readonly log: EventLog,
    private readonly store: CheckpointStore<ConversationCheckpoint>,
    options: CheckpointWriterOptions = {},
  ) {
    this.#everyEvents = Math.max(1, options.everyEvents ?? 1_000);
    this.#cacheSize = Math.max(1, options.cacheSize ?? 10_000);
  }

  /** A delivered commit, as its headers describe it. */
  async delivered(delivery: Delivery): Promise<CheckpointOutcome> {
    const span = delivery.eventSpan();
    if (!delivery.ref || !span) return 'not_due';
    return this.noteCommit(delivery.ref, {
      streamSeq: delivery.streamSeq,
      lastSeq: span.lastSeq,
      eventTypes: delivery.eventTypes(),
    });
  }

  /** Writes a checkpoint after this commit when one is due. */
  async noteCommit(ref: ConversationRef, commit: CommitNote): Promise<CheckpointOutcome> {
    const key = `${ref.tenant}.${ref.conversation}`;
    const condensed = commit.eventTypes.includes('condensation');
    const known = this.#known.get(key);
    // most commits: a short conversation, or one checkpointed lately, needs no read at all
    if (!condensed && (known?.tooLarge === true || commit.lastSeq - (known?.lastSeq ?? 0) < this.#everyEvents))
      return 'not_due';
    const stored = await this.store.get(ref);
    if (stored && stored.streamSeq >= commit.streamSeq) {
      this.#remember(key, stored.lastSeq);
      return 'stored_already';
    }
    if (!condensed && commit.lastSeq - (stored?.lastSeq ?? 0) < this.#everyEvents) {
      this.#remember(key, stored?.lastSeq ?? 0);
      return 'not_due';
    }
    // taken before the read: if the log's beginning goes meanwhile, the checkpoint is never used
    const origin = await this.log.firstCommitSeq(ref);
    const loaded = await loadConversation(this.log, ref, commit.streamSeq, { store: this.store }, stored ?? null);
    const last = loaded.commits.at(-1);
    if (origin === undefined || last === undefined) return 'not_stored';
    const folds = foldLoaded(loaded);
    this.#remember(key, loaded.tail.lastSeq);
    const run = folds.run.state();
    // a step before the first adds the system prompt to a view it builds itself: nothing to keep yet
    if (!run.hasSystemPrompt) return 'no_system_prompt';
    const lookback = Math.min(stepLookback(loaded.events, run.runStart), loaded.events.length - 1);
    const readFromSeq = loaded.events[lookback]?.seq ?? loaded.tail.lastSeq;
    const position = {
      streamSeq: last.streamSeq,
      commit: last.id,
      lastSeq: loaded.tail.lastSeq,
      origin: loaded.start?.checkpoint.origin ?? origin,
      readFrom: { streamSeq: commitHolding(loaded.commits, readFromSeq).streamSeq, seq: readFromSeq },
    };
    const put = await this.store.put(ref, position, checkpointFolds(folds), stored?.revision ?? 0);
    if (put.ok) return 'written';
    if (put.reason === 'too_large') {
      // a view that outgrew a KV value: an ever older checkpoint would cost more than it saves
      // (its reader would parse it and still read everything since); none until a condensation
      this.#remember(key, loaded.tail.lastSeq, true);
      if (stored) await this.store.delete(ref);
    }
    return 'not_stored';
  }

  #remember(key: string, lastSeq: number, tooLarge = false): void {
    setRecent(this.#known, key, { lastSeq, tooLarge }, this.#cacheSize);
  }
}

/**
 * A handler that also writes view checkpoints, after the handler's own work on each commit. A
 * checkpoint that cannot be written is logged and left to the next one: it never fails a commit.
 */
export function withCheckpoints(handler: CommitHandler, writer: CheckpointWriter): CommitHandler {
  return async (delivery) => {
    const outcome = await handler(delivery);
    try {
      const written = await writer.delivered(delivery);
      if (written !== 'not_due')
        delivery.logger.debug({ checkpoint: written, streamSeq: delivery.streamSeq }, 'view checkpoint');
    } catch (error) {
      if (!delivery.signal.aborted)
        delivery.logger.warn(
          { err: error, streamSeq: delivery.streamSeq },
          'view checkpoint not written; the next one is',
        );
    }
    return outcome;
  };
}

/** The commit (of those read, in order) that holds event `seq`. */
function commitHolding(commits: readonly CommitPlace[], seq: number): CommitPlace {
  let low = 0;
  let high = commits.length - 1;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if ((commits[middle] as CommitPlace).firstSeq <= seq) low = middle;
    else high = middle - 1;
  }
  return commits[low] as CommitPlace;
}
