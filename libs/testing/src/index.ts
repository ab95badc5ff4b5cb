export { freePort } from './free-port.js';
export { findNatsServerBinary } from './nats-binary.js';
export { NatsServerProcess } from './nats-server-process.js';
export type { NatsServerProcessOptions } from './nats-server-process.js';
export { containerRuntimeAvailable, startNatsContainer } from './nats-container.js';
export type { NatsTestServer } from './nats-container.js';
export { startNats } from './start-nats.js';
export { uniqueName } from './unique-name.js';
