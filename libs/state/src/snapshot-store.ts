import { EMPTY_TAIL, type ConversationRef, type EventLog, type StoredCommit, type Tail } from '@flotilla/log';
import type { KV, KvEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_SNAPSHOT_BUCKET, openSnapshotBucket, type SnapshotBucketOptions } from './bucket-setup.js';
import type { ConversationSnapshot } from './conversation-snapshot.js';
import { isStateError, StateError, StateErrorCode } from './errors.js';
import { applyCommit, foldCommits, initialSnapshot } from './fold.js';
import { decodeSnapshot, encodeSnapshot, type SnapshotIssue } from './snapshot-codec.js';
import { snapshotKey } from './snapshot-key.js';
import { classifyStoreError, isRevisionConflict } from './store-errors.js';

/** A stored value that is not a valid snapshot of its key; it is treated as missing and rebuilt. */
export type CorruptSnapshotReport = {
  readonly bucket: string;
  readonly key: string;
  readonly revision: number;
  readonly reason: string;
  readonly issues: readonly SnapshotIssue[];
};

export type SnapshotStoreOptions = SnapshotBucketOptions & {
  /** Called for every corrupt value a read meets (before it is treated as missing). */
  readonly onCorrupt?: (report: CorruptSnapshotReport) => void;
  /** Compare-and-set conflicts one call absorbs before failing with a retryable conflict. Default 100. */
  readonly maxConflicts?: number;
  /** Commits per KV write when catching up from the log. Default 256. */
  readonly catchUpBatch?: number;
};

/** A stored snapshot and its KV revision. */
export type SnapshotRecord = { readonly snapshot: ConversationSnapshot; readonly revision: number };

/** What a write call left in the store. `revision` is 0 when nothing is stored. */
export type AdvanceResult = SnapshotRecord & {
  /** Commits this call folded in (commits another writer had already applied are not counted). */
  readonly applied: number;
  /** Compare-and-set conflicts this call met and absorbed. */
  readonly conflicts: number;
};

export type CatchUpOptions = { readonly signal?: AbortSignal };

/** A conversation as its log says at the tail: the stored snapshot and the commits after it, folded. */
export type CurrentSnapshot = {
  /** The snapshot at `tail` (the initial one when the log is empty). */
  readonly snapshot: ConversationSnapshot;
  /** The log's tail as read: an append decided from `snapshot` expects it. */
  readonly tail: Tail;
  /**
   * What the store holds (revision 0: nothing), and the commits read after it; together they
   * make `snapshot`. `advanceKnown(ref, stored, [...commits, ...appended])` writes it on.
   */
  readonly stored: SnapshotRecord;
  readonly commits: readonly StoredCommit[];
};

type Loaded = { readonly snapshot: ConversationSnapshot | undefined; readonly revision: number };

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Conversation snapshots in a NATS KV bucket, one key per conversation (`<tenant>.<conversation>`),
 * written only with compare-and-set, so that concurrent writers never lose or double-count a
 * commit. The log stays the source of truth: a missing or corrupt snapshot is rebuilt from it.
 */
export class SnapshotStore {
  readonly bucket: string;
  readonly #maxConflicts: number;
  readonly #catchUpBatch: number;

  private constructor(
    readonly nc: NatsConnection,
    /** The underlying bucket, for tools and tests. */
    readonly kv: KV,
    bucket: string,
    private readonly options: SnapshotStoreOptions,
  ) {
    this.bucket = bucket;
    this.#maxConflicts = options.maxConflicts ?? 100;
    this.#catchUpBatch = Math.max(1, options.catchUpBatch ?? 256);
  }

  /** Creates or opens the bucket (idempotent) and returns the store. */
  static async open(nc: NatsConnection, options: SnapshotStoreOptions = {}): Promise<SnapshotStore> {
    const kv = await openSnapshotBucket(nc, options);
    return new SnapshotStore(nc, kv, options.bucket ?? DEFAULT_SNAPSHOT_BUCKET, options);
  }

  /** The validated snapshot and its revision, or undefined when none is stored (or it is corrupt). */
  async get(ref: ConversationRef): Promise<SnapshotRecord | undefined> {
    const loaded = await this.#load(ref, snapshotKey(ref));
    return loaded.snapshot && { snapshot: loaded.snapshot, revision: loaded.revision };
  }

  /**
   * Folds `commits` (in log order) into the stored snapshot with compare-and-set. On a conflict
   * it re-reads and re-applies; commits already applied (by anyone) are skipped. Throws a
   * CommitOrderError when the commits do not continue the stored snapshot: call catchUp instead.
   */
  async advance(ref: ConversationRef, commits: readonly StoredCommit[]): Promise<AdvanceResult> {
    const key = snapshotKey(ref);
    for (let conflicts = 0; ;) {
      const loaded = await this.#load(ref, key);
      const base = loaded.snapshot ?? initialSnapshot(ref);
      const next = foldCommits(base, commits);
      const applied = next.commits - base.commits;
      if (applied === 0) return { snapshot: base, revision: loaded.snapshot ? loaded.revision : 0, applied, conflicts };
      const revision = await this.#write(key, next, loaded.revision);
      if (revision !== undefined) return { snapshot: next, revision, applied, conflicts };
      conflicts = await this.#afterConflict(conflicts, key);
    }
  }

  /**
   * Folds `commits` (which must continue it) into a snapshot the caller holds as stored at
   * `record.revision` (0: nothing stored), and writes it with compare-and-set, without reading
   * the store. Undefined when the stored value moved on meanwhile: read it again (catchUp).
   */
  async advanceKnown(
    ref: ConversationRef,
    record: SnapshotRecord,
    commits: readonly StoredCommit[],
  ): Promise<SnapshotRecord | undefined> {
    const next = foldCommits(record.snapshot, commits);
    if (next === record.snapshot) return record;
    const revision = await this.#write(snapshotKey(ref), next, record.revision);
    return revision === undefined ? undefined : { snapshot: next, revision };
  }

  /**
   * The conversation at its log's tail, without writing: the stored snapshot, the tail, and only
   * the commits after the snapshot's position (usually none, one or two, read with direct gets),
   * folded. The cost is what the projector has not folded yet, not the history. A snapshot that
   * is missing, outdated, corrupt, ahead of the log or not continued by it is replaced by a fold
   * of the whole log (once: the next write stores it).
   */
  async current(ref: ConversationRef, log: EventLog, options: CatchUpOptions = {}): Promise<CurrentSnapshot> {
    const key = snapshotKey(ref);
    // read side by side: a snapshot newer than the tail (a projector wrote between the two) is
    // noticed below, and the tail read again
    let [loaded, tail] = await Promise.all([this.#load(ref, key), log.tail(ref)]);
    if (tail.streamSeq === 0)
      return {
        snapshot: initialSnapshot(ref),
        tail: EMPTY_TAIL,
        stored: { snapshot: initialSnapshot(ref), revision: loaded.revision },
        commits: [],
      };
    if (loaded.snapshot && loaded.snapshot.last_stream_seq > tail.streamSeq) tail = await log.tail(ref);
    let base =
      loaded.snapshot && loaded.snapshot.last_stream_seq <= tail.streamSeq ? loaded.snapshot : initialSnapshot(ref);
    for (;;) {
      const commits: StoredCommit[] = [];
      const from = { afterSeq: base.last_seq, afterStreamSeq: base.last_stream_seq, untilStreamSeq: tail.streamSeq };
      for await (const commit of log.read(ref, { ...from, ...(options.signal ? { signal: options.signal } : {}) }))
        commits.push(commit);
      let snapshot: ConversationSnapshot | undefined;
      try {
        snapshot = foldCommits(base, commits);
      } catch (error) {
        if (!isStateError(error) || base.last_seq === 0) throw error;
      }
      // a snapshot the log does not continue up to its tail belongs to another log (a purged and
      // recreated conversation): fold the log whole
      if (snapshot && (snapshot.last_seq === tail.lastSeq || base.last_seq === 0)) {
        return { snapshot, tail, stored: { snapshot: base, revision: loaded.revision }, commits };
      }
      base = initialSnapshot(ref);
      loaded = { snapshot: undefined, revision: loaded.revision };
    }
  }

  /** Folds in whatever the log holds after the stored snapshot's last_seq (from the start when none is stored). */
  async catchUp(ref: ConversationRef, log: EventLog, options: CatchUpOptions = {}): Promise<AdvanceResult> {
    const current = await this.get(ref);
    const afterSeq = current?.snapshot.last_seq ?? 0;
    let result: AdvanceResult = {
      snapshot: current?.snapshot ?? initialSnapshot(ref),
      revision: current?.revision ?? 0,
      applied: 0,
      conflicts: 0,
    };
    const flush = async (batch: readonly StoredCommit[]): Promise<void> => {
      const step = await this.advance(ref, batch);
      result = { ...step, applied: result.applied + step.applied, conflicts: result.conflicts + step.conflicts };
    };
    let batch: StoredCommit[] = [];
    // the snapshot knows its last commit's stream position: read from there, no search for afterSeq
    const from =
      current && current.snapshot.last_stream_seq > 0 ? { afterStreamSeq: current.snapshot.last_stream_seq } : {};
    for await (const commit of log.read(ref, {
      afterSeq,
      ...from,
      ...(options.signal ? { signal: options.signal } : {}),
    })) {
      batch.push(commit);
      if (batch.length >= this.#catchUpBatch) {
        await flush(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await flush(batch);
    if (result.applied === 0 && afterSeq > 0) {
      const tail = await log.tail(ref);
      if (tail.lastSeq < afterSeq) {
        throw new StateError(
          StateErrorCode.SnapshotAhead,
          `the snapshot of ${ref.tenant}/${ref.conversation} is at seq ${afterSeq} but the log ends at seq ${tail.lastSeq}: rebuild it from the log`,
        );
      }
    }
    return result;
  }

  /**
   * Folds the whole log from scratch and stores the result, overwriting whatever is stored
   * (with compare-and-set, reading on from the log when another writer got there first).
   * An empty log leaves no snapshot.
   */
  async rebuild(ref: ConversationRef, log: EventLog, options: CatchUpOptions = {}): Promise<AdvanceResult> {
    const key = snapshotKey(ref);
    let snapshot = initialSnapshot(ref);
    for (let conflicts = 0; ;) {
      for await (const commit of log.read(ref, {
        afterSeq: snapshot.last_seq,
        ...(options.signal ? { signal: options.signal } : {}),
      })) {
        snapshot = applyCommit(snapshot, commit);
      }
      if (snapshot.last_seq === 0) {
        await this.delete(ref);
        return { snapshot, revision: 0, applied: 0, conflicts };
      }
      const entry = await this.#entry(key);
      const revision = await this.#write(key, snapshot, entry?.revision ?? 0);
      if (revision !== undefined) return { snapshot, revision, applied: snapshot.commits, conflicts };
      conflicts = await this.#afterConflict(conflicts, key);
    }
  }

  /** Removes the conversation's snapshot (it is rebuilt from the log when next needed). */
  async delete(ref: ConversationRef): Promise<void> {
    const key = snapshotKey(ref);
    try {
      await this.kv.purge(key);
    } catch (error) {
      throw classifyStoreError(error, this.nc, `deleting snapshot ${key} in ${this.bucket}`);
    }
  }

  async #entry(key: string): Promise<KvEntry | null> {
    try {
      return await this.kv.get(key);
    } catch (error) {
      throw classifyStoreError(error, this.nc, `reading snapshot ${key} in ${this.bucket}`);
    }
  }

  /** The stored snapshot (undefined when missing, deleted or corrupt) and the key's revision (0 when absent). */
  async #load(ref: ConversationRef, key: string): Promise<Loaded> {
    const entry = await this.#entry(key);
    if (!entry) return { snapshot: undefined, revision: 0 };
    if (entry.operation !== 'PUT') return { snapshot: undefined, revision: entry.revision };
    const decoded = decodeSnapshot(entry.value, ref);
    if (decoded.ok) return { snapshot: decoded.snapshot, revision: entry.revision };
    this.options.onCorrupt?.({
      bucket: this.bucket,
      key,
      revision: entry.revision,
      reason: decoded.reason,
      issues: decoded.issues,
    });
    return { snapshot: undefined, revision: entry.revision };
  }

  /** Writes with compare-and-set on `revision` (0: the key must not exist); undefined on a conflict. */
  async #write(key: string, snapshot: ConversationSnapshot, revision: number): Promise<number | undefined> {
    const data = encodeSnapshot(snapshot);
    try {
      return revision === 0 ? await this.kv.create(key, data) : await this.kv.update(key, data, revision);
    } catch (error) {
      if (isRevisionConflict(error)) return undefined;
      throw classifyStoreError(error, this.nc, `writing snapshot ${key} in ${this.bucket}`);
    }
  }

  async #afterConflict(conflicts: number, key: string): Promise<number> {
    const count = conflicts + 1;
    if (count > this.#maxConflicts) {
      throw new StateError(
        StateErrorCode.Conflict,
        `gave up writing snapshot ${key} in ${this.bucket} after ${this.#maxConflicts} conflicting writes`,
      );
    }
    if (count > 1) await pause(Math.random() * Math.min(2 * count, 25));
    return count;
  }
}
