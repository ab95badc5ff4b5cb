import type { Event } from '@flotilla/events';
import type { ConversationRef, EventLog, StoredCommit, Tail } from '@flotilla/log';
import type { CheckpointStore, StoredCheckpoint } from './checkpoint-store.js';

/** A conversation read from a checkpoint: what the checkpoint holds of everything before it. */
export type ConversationStart<S> = {
  readonly state: S;
  readonly checkpoint: StoredCheckpoint<S>;
  /**
   * How many of the loaded events come before the checkpoint: the last events before it, which a
   * step's backward looks may read. Folds resumed from `state` skip them.
   */
  readonly folded: number;
};

/** Where a commit read sits: its stream sequence, its first event's seq and its id. */
export type CommitPlace = { readonly streamSeq: number; readonly firstSeq: number; readonly id: string };

export type LoadedConversation<S> = {
  /** The events read: the whole log, or from a little before the checkpoint (`start`) on. */
  readonly events: Event[];
  /** The subject's last stream sequence read up to and the last event seq. */
  readonly tail: Tail;
  readonly start?: ConversationStart<S>;
  /** Every commit read, in order. */
  readonly commits: readonly CommitPlace[];
};

/** How a load uses checkpoints. */
export type CheckpointReading<S> = {
  readonly store: CheckpointStore<S>;
  /** Whether this reader can use a checkpoint (default: any that fits the log). */
  readonly accept?: (checkpoint: StoredCheckpoint<S>) => boolean;
  /** Told why a stored checkpoint was not used although one was there. */
  readonly onUnused?: (reason: string) => void;
};

/**
 * A conversation up to the subject's message `target`: from its checkpoint when one fits the
 * log (read from a little before it), otherwise the whole log. A checkpoint fits when the log
 * still starts with the commit it was made from and still holds, where the checkpoint says, the
 * commit it was taken after; either way the events returned are the log's own, and what a reader
 * builds from `start` and them equals what it builds from the whole log.
 *
 * `stored` saves the store's read when the caller already has the checkpoint (null: none).
 */
export async function loadConversation<S>(
  log: EventLog,
  ref: ConversationRef,
  target: number,
  checkpoints?: CheckpointReading<S>,
  stored?: StoredCheckpoint<S> | null,
): Promise<LoadedConversation<S>> {
  if (checkpoints !== undefined && stored !== null) {
    const loaded = await fromCheckpoint(log, ref, target, checkpoints, stored);
    if (loaded !== undefined) return loaded;
  }
  return readAll(log, ref, target);
}

async function fromCheckpoint<S>(
  log: EventLog,
  ref: ConversationRef,
  target: number,
  reading: CheckpointReading<S>,
  known: StoredCheckpoint<S> | undefined,
): Promise<LoadedConversation<S> | undefined> {
  const [checkpoint, origin] = await Promise.all([
    known ??
      reading.store
        .get(ref)
        .catch(
          (error: unknown) => void reading.onUnused?.(`the checkpoint could not be read: ${(error as Error).message}`),
        ),
    log.firstCommitSeq(ref),
  ]);
  if (!checkpoint || checkpoint.streamSeq > target) return undefined;
  const unused = (reason: string): undefined => {
    reading.onUnused?.(reason);
    return undefined;
  };
  if (origin !== checkpoint.origin)
    return unused(`the log's first commit is at ${origin ?? 'none'}, the checkpoint's at ${checkpoint.origin}`);
  if (reading.accept && !reading.accept(checkpoint)) return unused('this reader does not accept it');
  const { readFrom } = checkpoint;
  const events: Event[] = [];
  const commits: CommitPlace[] = [];
  let lastSeq = 0;
  let reached = false;
  let mismatch: string | undefined;
  const check = (commit: StoredCommit): string | undefined => {
    if (
      commits.length === 0 &&
      (commit.streamSeq !== readFrom.streamSeq || commit.firstSeq > readFrom.seq || commit.lastSeq < readFrom.seq)
    ) {
      return `no commit holding seq ${readFrom.seq} at ${readFrom.streamSeq}`;
    }
    if (
      commit.streamSeq === checkpoint.streamSeq &&
      (commit.id !== checkpoint.commit || commit.lastSeq !== checkpoint.lastSeq)
    ) {
      return `the commit at ${checkpoint.streamSeq} is ${commit.id}, not ${checkpoint.commit}`;
    }
    if (!reached && commit.streamSeq > checkpoint.streamSeq) return `no commit at ${checkpoint.streamSeq}`;
    return undefined;
  };
  const from = {
    afterSeq: 0,
    afterStreamSeq: readFrom.streamSeq - 1,
    untilStreamSeq: target,
    expectedMessages: target - readFrom.streamSeq + 1,
  };
  await log.forEachCommit(ref, from, (commit) => {
    mismatch = check(commit);
    if (mismatch !== undefined) return false;
    if (commit.streamSeq === checkpoint.streamSeq) reached = true;
    commits.push({ streamSeq: commit.streamSeq, firstSeq: commit.firstSeq, id: commit.id });
    for (const event of commit.events) if (event.seq >= readFrom.seq) events.push(event);
    lastSeq = commit.lastSeq;
    return true;
  });
  if (mismatch !== undefined) return unused(mismatch);
  if (!reached) return unused(`no commit at ${checkpoint.streamSeq}`);
  return {
    events,
    // foreign messages after the last commit still move the subject's tail
    tail: { streamSeq: target, lastSeq },
    start: { state: checkpoint.state, checkpoint, folded: checkpoint.lastSeq - readFrom.seq + 1 },
    commits,
  };
}

async function readAll<S>(log: EventLog, ref: ConversationRef, target: number): Promise<LoadedConversation<S>> {
  const events: Event[] = [];
  const commits: CommitPlace[] = [];
  let lastSeq = 0;
  await log.forEachCommit(ref, { afterSeq: 0, afterStreamSeq: 0, untilStreamSeq: target }, (commit) => {
    commits.push({ streamSeq: commit.streamSeq, firstSeq: commit.firstSeq, id: commit.id });
    for (const event of commit.events) events.push(event);
    lastSeq = commit.lastSeq;
  });
  return { events, tail: { streamSeq: target, lastSeq }, commits };
}
