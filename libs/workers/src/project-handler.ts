import type { EventLog } from '@flotilla/log';
import type { CommitHandler } from '@flotilla/runtime';
import type { SnapshotStore } from '@flotilla/state';

/**
 * Keeps the KV snapshot current: on a conversation's tail commit, fold whatever the log holds
 * past the snapshot (idempotent, CAS; a burst of commits coalesces into one catch-up).
 */
export function createProjectHandler(log: EventLog, store: SnapshotStore): CommitHandler {
  return async (delivery) => {
    const ref = delivery.ref;
    if (!ref) return { ack: true, outcome: 'foreign_subject' };
    if (delivery.streamSeq < (await log.lastStreamSeq(ref))) return { ack: true, outcome: 'not_tail' };
    await store.catchUp(ref, log, { signal: delivery.signal });
    return { ack: true, outcome: 'projected' };
  };
}
