export { freePort } from './free-port.js';
export { findNatsServerBinary } from './nats-binary.js';
export { NatsServerProcess } from './nats-server-process.js';
export type { NatsServerProcessOptions } from './nats-server-process.js';
