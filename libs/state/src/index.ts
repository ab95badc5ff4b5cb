export {
  ConversationSnapshot,
  CURRENT_SNAPSHOT_VERSION,
  SnapshotCounters,
  SnapshotError,
  SnapshotUsage,
  SUPPORTED_SNAPSHOT_VERSIONS,
} from './conversation-snapshot.js';
export { applyCommit, foldCommits, initialSnapshot, isApplied } from './fold.js';
export { CommitOrderError, StateError, StateErrorCode, isStateError } from './errors.js';
export { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';
export type { DecodeSnapshotResult, SnapshotIssue } from './snapshot-codec.js';
export { snapshotKey } from './snapshot-key.js';
export { DEFAULT_SNAPSHOT_BUCKET, openSnapshotBucket } from './bucket-setup.js';
export type { SnapshotBucketOptions } from './bucket-setup.js';
export { SnapshotStore } from './snapshot-store.js';
export type { AdvanceResult, CatchUpOptions, CorruptSnapshotReport, SnapshotRecord, SnapshotStoreOptions } from './snapshot-store.js';
