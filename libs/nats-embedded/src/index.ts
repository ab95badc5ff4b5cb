export { freePort } from './free-port.js';
export { findNatsServerBinary, missingNatsServerHint, PROJECT_NATS_SERVER } from './nats-binary.js';
export { NatsCluster } from './nats-cluster.js';
export type { NatsClusterOptions, StreamQueryOptions, StreamReplicaState } from './nats-cluster.js';
export { NatsEmbeddedError, NatsEmbeddedErrorCode } from './nats-embedded-error.js';
export { NatsServerProcess } from './nats-server-process.js';
export type { NatsServerProcessOptions } from './nats-server-process.js';
export { binaryVersion, compareVersions, isSupportedServerVersion, MINIMUM_SERVER_VERSION } from './server-version.js';
