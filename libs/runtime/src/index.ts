export { loadServiceConfig, ServiceConfig } from './service-config.js';
export type { ServiceDefaults } from './service-config.js';
export { createLogger } from './logger.js';
export type { Logger } from './logger.js';
export { ServiceMetrics } from './metrics.js';
export { startHealthServer } from './health-server.js';
export type { HealthChecks, HealthServer } from './health-server.js';
export { ensureDurableConsumer, ensureGroupConsumers, groupBacklog } from './durable-consumer.js';
export { OwnCommits } from './own-commits.js';
export type { DurableConsumerSpec } from './durable-consumer.js';
export { PARTITION_PULL_EXPIRES_MS, startCommitConsumer } from './commit-consumer.js';
export type {
  CommitConsumer,
  CommitConsumerOptions,
  CommitHandler,
  Delivery,
  EventSpan,
  HandleOutcome,
  PartitionPull,
} from './commit-consumer.js';
export { ConversationCache } from './conversation-cache.js';
export type { CachedConversation, ConversationCacheOptions } from './conversation-cache.js';
export {
  CHECKPOINT_FORMAT_VERSION,
  checkpointKey,
  CheckpointStore,
  DEFAULT_CHECKPOINT_BUCKET,
} from './checkpoint-store.js';
export type {
  CheckpointParseResult,
  CheckpointPosition,
  CheckpointPut,
  CheckpointStoreOptions,
  StoredCheckpoint,
} from './checkpoint-store.js';
export { loadConversation } from './conversation-load.js';
export type { CheckpointReading, CommitPlace, ConversationStart, LoadedConversation } from './conversation-load.js';
export { TailHints } from './tail-hints.js';
export { setRecent } from './recent-map.js';
export { whenAborted } from './when-aborted.js';
export { DeltaCoalescer } from './delta-coalescer.js';
export {
  DEFAULT_SIGNAL_ROOT,
  deltaSubject,
  interruptSubject,
  InterruptRegistry,
  publishDelta,
  publishInterrupt,
} from './signals.js';
export {
  DEFAULT_RUNNERS_BUCKET,
  DEFAULT_WORKSPACES_BUCKET,
  requestWorkspaceDeletion,
  RunnerHeader,
  RunnerRegistry,
} from './runner-registry.js';
export { RunnerSubjects } from '@flotilla/bus';
export type { RunnerInfo, RunnerRegistryOptions, WorkspaceOwner } from './runner-registry.js';
export { connectWithRetry, openLogWithRetry, runService } from './run-service.js';
export type { ServiceContext, ServiceDefinition, ServiceParts, ServiceQueue } from './run-service.js';
export { adoptAllocator } from './allocator.js';
export { AckBatch } from './ack-batch.js';
export { BatchedPull } from './batched-pull.js';
export type { BatchedPullOptions, ConsumedMessage } from './batched-pull.js';
export { requestPurge, servePurges } from './conversation-purge.js';
export type { PurgeOptions } from './conversation-purge.js';
export { startServiceTracing } from './service-tracing.js';
export {
  DEFAULT_IMAGES_BUCKET,
  describeImage,
  IMAGE_CHUNK_BYTES,
  ImageError,
  ImageErrorCode,
  ImageStore,
} from './image-store.js';
export type { ImageStoreOptions, StoredImage } from './image-store.js';
export {
  answerWorkspace,
  askWorkspace,
  FileVersion,
  ListedEntry,
  MAX_WORKSPACE_CHUNK_BYTES,
  parseWorkspaceRequest,
  UploadId,
  workspaceBodyBytes,
  workspaceChunkBytes,
  WorkspaceAnswers,
  WorkspaceFailureCode,
  WorkspaceHeader,
  WorkspaceOp,
  WorkspaceRequestError,
} from './workspace-requests.js';
export type { AskOptions, WorkspaceAnswer, WorkspaceRequest } from './workspace-requests.js';
export type { WakeOptions } from './condenser-wakeups.js';
export {
  CONDENSER_QUEUE,
  CondenserWakeup,
  CondenserWakeupReason,
  CondenserWakeups,
  condenserWakeupSubject,
  ensureCondenserWakeups,
  parseCondenserWakeup,
  removeRetiredCondenserGroup,
} from './condenser-wakeups.js';
export { DeletionNotice, ensureDeletionNotices, publishDeletion } from './deletion-notices.js';
export {
  budgetOf,
  budgetReached,
  BudgetLimits,
  loadTenantBudgets,
  NO_USAGE,
  periodsOf,
  TenantBudget,
  TenantBudgets,
} from './tenant-budgets.js';
export type { Usage } from './tenant-budgets.js';
export { TenantUsageStore } from './tenant-usage-store.js';
export { TenantBudgetGuard } from './tenant-budget-guard.js';
export type { TenantBudgetGuardOptions } from './tenant-budget-guard.js';
