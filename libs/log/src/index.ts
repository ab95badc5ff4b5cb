export { EventLog } from './event-log.js';
export type {
  AppendOptions,
  EventLogOptions,
  InvalidMessagePolicy,
  InvalidMessageReport,
  ReadOptions,
} from './event-log-options.js';
export { placeEvents } from './place-events.js';
export { ConflictError, LogError, LogErrorCode, isConflict } from './errors.js';
export {
  assertConversationRef,
  conversationFilter,
  conversationSubject,
  DEFAULT_SUBJECT_PREFIX,
  legacyConversationSubject,
  parseConversationSubject,
  subjectKind,
  subjectPartition,
} from './conversation-ref.js';
export type { ConversationRef } from './conversation-ref.js';
export { EMPTY_TAIL, tailOf } from './stored-commit.js';
export type { StoredCommit, Tail } from './stored-commit.js';
export { DEFAULT_STREAM_NAME } from './stream-setup.js';
export type { EventStreamOptions } from './stream-setup.js';
export { decodeCommit, encodeCommit, eventTypesOf, placementOf } from './codec.js';
export type { DecodeResult, RawMessage } from './codec.js';
export { directBatch, DIRECT_BATCH_SIZE, readSubjectBatches, readSubjectRange } from './direct-batch.js';
export type { DirectBatch, DirectBatchRequest, SubjectRange } from './direct-batch.js';
export { appendSurely, appendWithRetry } from './append-with-retry.js';
export type { AppendSurelyOptions, AppendWithRetryOptions } from './append-with-retry.js';
export { tapConsumerName, tapStream } from './stream-tap.js';
export type { StreamTapOptions, TapItem, TapResult, TapStart } from './stream-tap.js';
