import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { containerRuntimeAvailable, startNatsContainer } from './nats-container.js';

const engine = await containerRuntimeAvailable();
if (!engine) console.info('skipping the container NATS harness test: no Docker engine is reachable on this machine');

describe.skipIf(!engine)('a nats-server in a container (when a Docker engine is reachable)', () => {
  it('starts, serves JetStream, and restarts', async () => {
    await using server = await startNatsContainer();
    const nc = await connect({ servers: server.url });
    expect(nc.info?.jetstream).toBe(true);
    await nc.close();
    await server.restart();
  }, 120_000);
});
