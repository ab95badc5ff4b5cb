import { decodeCommit, type EventLog } from '@flotilla/log';
import { setRecent, type CommitHandler } from '@flotilla/runtime';
import { foldCommits, type SnapshotRecord, type SnapshotStore } from '@flotilla/state';
import { NOT_TAIL } from './at-tail.js';

export type ProjectHandlerOptions = {
  /** Snapshots held in memory (with their KV revision), most recently projected kept. Default 10,000. */
  readonly cacheSize?: number;
  /**
   * How long a conversation's newest commit waits for the next one before its snapshot is written
   * (the service's FLOTILLA_PROJECTOR_SETTLE_MS): a step's commits (its actions, their start,
   * their results) are then written once. The wait ends as soon as the next commit is queued here,
   * and a conversation whose commits keep coming is still written once per period, so the
   * snapshot trails the log by at most about this much; 0 writes every commit at once.
   */
  readonly settleMs: number;
};

/**
 * Keeps the KV snapshot current. A snapshot this process wrote last is folded forward with the
 * delivered commit and written with compare-and-set on the revision it holds: one KV write, no
 * read. Otherwise (not held, a gap, or another writer got there first) it folds whatever the log
 * holds past the stored snapshot, up to the conversation's last commit, whichever commit was
 * delivered: the commits it read are then delivered as already projected, so a burst of commits
 * costs one catch-up, and a projector that lags the log still moves each snapshot forward (one
 * that waited for the tail would spend a get per commit and never write a conversation that keeps
 * stepping). Idempotent either way.
 *
 * A commit with a later one of its conversation queued behind it in this process is folded in
 * memory and acked: the later one's write covers both, and if this process dies first, that
 * later commit is redelivered and catches up. The newest commit waits up to `settleMs` for a
 * successor, and nothing stays unwritten for longer than that.
 */
export function createProjectHandler(
  log: EventLog,
  store: SnapshotStore,
  options: ProjectHandlerOptions,
): CommitHandler {
  const cacheSize = Math.max(1, options.cacheSize ?? 10_000);
  const settleMs = Math.max(0, options.settleMs);
  const held = new Map<string, SnapshotRecord>();
  /** When each held snapshot first got a commit folded in memory only (not yet written). */
  const unwrittenSince = new Map<string, number>();
  /** How much longer the conversation's commits folded in memory only may stay unwritten. */
  const settleLeft = (key: string): number => {
    const since = unwrittenSince.get(key);
    return since === undefined ? settleMs : settleMs - (Date.now() - since);
  };
  const overdue = (key: string): boolean => unwrittenSince.has(key) && settleLeft(key) <= 0;
  const hold = (key: string, record: SnapshotRecord): void => {
    unwrittenSince.delete(key);
    if (record.revision === 0) held.delete(key);
    else setRecent(held, key, record, cacheSize);
  };

  return async (delivery) => {
    const ref = delivery.ref;
    if (!ref) return { ack: true, outcome: 'foreign_subject' };
    const key = `${ref.tenant}.${ref.conversation}`;
    const record = held.get(key);
    if (record) {
      if (record.snapshot.last_stream_seq >= delivery.streamSeq) return { ack: true, outcome: 'already_projected' };
      const decoded = decodeCommit(delivery.message, ref);
      if (decoded.ok && decoded.commit.firstSeq === record.snapshot.last_seq + 1) {
        if (settleLeft(key) > 0 && (await delivery.laterQueuedWithin(settleLeft(key))) && !overdue(key)) {
          // the later commit queued here writes both: fold this one in memory only (the revision
          // held is still the one stored, so that write's compare-and-set stays exact)
          held.set(key, { snapshot: foldCommits(record.snapshot, [decoded.commit]), revision: record.revision });
          if (!unwrittenSince.has(key)) unwrittenSince.set(key, Date.now());
          return { ack: true, outcome: 'coalesced' };
        }
        const next = await store.advanceKnown(ref, record, [decoded.commit]);
        if (next) {
          hold(key, next);
          return { ack: true, outcome: 'projected' };
        }
      }
      held.delete(key);
      unwrittenSince.delete(key);
    }
    // the later commit queued here catches up right after this one
    if (delivery.laterQueued()) return NOT_TAIL;
    const result = await store.catchUp(ref, log, { signal: delivery.signal });
    hold(key, { snapshot: result.snapshot, revision: result.revision });
    return { ack: true, outcome: 'projected' };
  };
}
