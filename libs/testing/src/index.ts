export { freePort, findNatsServerBinary, NatsServerProcess } from '@flotilla/nats-embedded';
export type { NatsServerProcessOptions } from '@flotilla/nats-embedded';
export { containerRuntimeAvailable, startNatsContainer } from './nats-container.js';
export type { NatsTestServer } from './nats-container.js';
export { findOldNatsServer } from './old-nats-server.js';
export type { OldNatsServer } from './old-nats-server.js';
export { startNats } from './start-nats.js';
export { uniqueName } from './unique-name.js';
