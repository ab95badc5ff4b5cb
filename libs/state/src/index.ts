export {
  ConversationSnapshot,
  CURRENT_SNAPSHOT_VERSION,
  SnapshotCounters,
  SnapshotError,
  SnapshotEventCounts,
  SnapshotFinalResponse,
  SnapshotAgentSpec,
  SnapshotUsage,
  SUPPORTED_SNAPSHOT_VERSIONS,
} from './conversation-snapshot.js';
export {
  conversationState,
  copyState,
  foldState,
  initialState,
  MAX_EARLY_ANSWERS,
  notStartedActions,
  PendingAction,
} from './conversation-state.js';
export type { ConversationState } from './conversation-state.js';
export { applyCommit, foldCommits, initialSnapshot, isApplied } from './fold.js';
export { CommitOrderError, StateError, StateErrorCode, isStateError } from './errors.js';
export { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';
export type { DecodeSnapshotResult, SnapshotIssue } from './snapshot-codec.js';
export { snapshotKey } from './snapshot-key.js';
export { DEFAULT_SNAPSHOT_BUCKET, openSnapshotBucket } from './bucket-setup.js';
export type { SnapshotBucketOptions } from './bucket-setup.js';
export { SnapshotStore } from './snapshot-store.js';
export type {
  AdvanceResult,
  CatchUpOptions,
  CorruptSnapshotReport,
  CurrentSnapshot,
  SnapshotRecord,
  SnapshotStoreOptions,
} from './snapshot-store.js';
