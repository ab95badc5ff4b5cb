export {
  BusVariables,
  DEFAULT_NATS_URL,
  describeBus,
  isBusCredentialSetting,
  loadBusSettings,
} from './bus-settings.js';
export type { BusAuth, BusSettings, BusTls, SecretSource } from './bus-settings.js';
export { requestAnswer } from './answered-request.js';
export {
  answersPrefix,
  answersUnder,
  connectionInboxPrefix,
  connectionOptions,
  inboxPrefix,
} from './connection-options.js';
export type { BusConnectionOptions } from './connection-options.js';
export { BusConfigError, UnsupportedServerError } from './errors.js';
export type { UnsupportedServerErrorCode } from './errors.js';
export { assertServerSupported, connectBus } from './connect-bus.js';
export type { BusConnectOptions } from './connect-bus.js';
export {
  AskSubjects,
  bucketStream,
  Buckets,
  COMMIT_KINDS,
  commitKindOf,
  commitSubjects,
  commitSubjectTransform,
  CONDENSER_WAKEUPS,
  DELETIONS,
  DEFAULT_SIGNAL_ROOT,
  DEFAULT_STREAM_NAME,
  DEFAULT_STREAM_NAMES,
  DEFAULT_SUBJECT_PREFIX,
  everyCommit,
  groupConsumerNames,
  groupConsumers,
  groupFilterSubjects,
  groupKinds,
  isCommitKind,
  legacyCommitSubjects,
  PARTITION_PRIORITY_GROUP,
  PARTITIONED_GROUPS,
  PARTITIONS,
  partitionPriority,
  partitionPriorities,
  partitionOwners,
  memberSubject,
  PURGE_SUBJECT,
  RunnerSubjects,
  SCHEDULES,
  SELF_CONTINUING,
  WEBHOOK_DELIVERIES,
  WRITER_KINDS,
} from './layout.js';
export type { BucketRole, CommitKind, CommitWriter, GroupConsumer, StreamNames } from './layout.js';
export {
  appendsToLog,
  CONSUMER_GROUPS,
  FOLLOWS_LOG,
  GROUP_QUEUES,
  identityName,
  permissionsFor,
  SERVICE_BUCKETS,
  SERVICES,
} from './permissions.js';
export type { BucketAccess, Identity, Permissions, ServiceName } from './permissions.js';
export { authorizationConfig, ensureUsers, userEnvironment } from './server-authorization.js';
export type { GeneratedUser } from './server-authorization.js';
export {
  describeDrift,
  loadStorageSettings,
  replicasWarning,
  StorageVariables,
  streamDrift,
} from './storage-settings.js';
export type { SettingDrift, StorageSettings, WantedStream } from './storage-settings.js';
export { checkBucketStorage } from './storage-check.js';
export { isLostCreationRace, isTransientNatsError, whileUnavailable } from './availability.js';
export type { WhileUnavailableOptions } from './availability.js';
export { BucketError, openBucket } from './open-bucket.js';
export type { BucketErrorCode, OpenBucketOptions } from './open-bucket.js';
export { ensureStream, ensureWorkQueue, parseQueueMessage } from './work-queue.js';
export type { WorkQueueSpec } from './work-queue.js';
export {
  LOCAL_TAP_FILE,
  localTapFile,
  readLocalTap,
  removeLocalTap,
  withLocalTap,
  writeLocalTap,
} from './local-tap.js';
export type { LocalTap } from './local-tap.js';
