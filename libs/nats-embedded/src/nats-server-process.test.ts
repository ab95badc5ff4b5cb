import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { NatsServerProcess } from './nats-server-process.js';
import { findNatsServerBinary } from './nats-binary.js';

describe.skipIf(!findNatsServerBinary())('NatsServerProcess', () => {
  it('keeps JetStream data across a SIGKILL and restart on the same port', async () => {
    await using server = await NatsServerProcess.start();
    const nc = await connect({ servers: server.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'HARNESS', subjects: ['harness.>'] });
      const js = jetstream(nc);
      await js.publish('harness.a', 'one');
      await server.kill();
      expect(server.running).toBe(false);
      await server.restart();
      expect(server.running).toBe(true);
      await expect.poll(async () => (await jsm.streams.info('HARNESS').catch(() => undefined))?.state.messages, { timeout: 10_000 }).toBe(1);
    } finally {
      await nc.close();
    }
  });
});
