import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { NatsCluster } from './nats-cluster.js';
import { findNatsServerBinary } from './nats-binary.js';

/** Publishes until acknowledged: while a stream elects a new leader, publishes time out or find no responder. */
async function publishAcked(js: JetStreamClient, subject: string, id: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      // the message id makes a retry of a stored message whose ack was lost a duplicate, not a second copy
      await js.publish(subject, id, { msgID: id, timeout: 1_000 });
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`message ${id} was not acknowledged in ${timeoutMs} ms`, { cause: error });
      await sleep(100);
    }
  }
}

describe.skipIf(!findNatsServerBinary())('NatsCluster', () => {
  it('keeps every acknowledged message of an R3 stream when its leader is SIGKILLed, and the restarted node catches up', async () => {
    await using cluster = await NatsCluster.start();
    expect(cluster.nodes).toHaveLength(3);
    expect(new Set(cluster.nodes.map((node) => node.port)).size).toBe(3);
    expect(cluster.url).toBe(cluster.urls.join(','));
    const nc = await connect({ servers: cluster.urls, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'FAILOVER', subjects: ['failover.>'], num_replicas: 3 });
      const js = jetstream(nc);
      for (let index = 1; index <= 50; index++) await publishAcked(js, 'failover.m', `m${index}`);

      const leader = await cluster.streamLeader('FAILOVER');
      const { port, storeDir } = cluster.nodes[leader] ?? {};
      await cluster.kill(leader);
      expect(cluster.nodes[leader]?.running).toBe(false);
      for (let index = 51; index <= 100; index++) await publishAcked(js, 'failover.m', `m${index}`);
      expect(await cluster.streamLeader('FAILOVER')).not.toBe(leader);

      await cluster.restart(leader);
      expect(cluster.nodes[leader]).toMatchObject({ running: true, port, storeDir });
      await cluster.waitCurrent('FAILOVER', 30_000);
      for (let index = 0; index < cluster.nodes.length; index++) {
        expect(await cluster.streamState(index, 'FAILOVER'), `node ${index}`).toMatchObject({
          messages: 100,
          firstSeq: 1,
          lastSeq: 100,
        });
      }
      expect((await jsm.streams.info('FAILOVER')).state.messages).toBe(100);
    } finally {
      await nc.close();
    }
  }, 60_000);

  it('applies the shared config text to every node: an anonymous client is refused, the configured user gets JetStream', async () => {
    const logs: string[][] = [[], [], []];
    await using cluster = await NatsCluster.start({
      name: 'guarded',
      config: 'authorization { users: [{ user: flotilla, password: s3cret }] }',
      onLog: (node, line) => logs[node]?.push(line),
    });
    for (const [index, url] of cluster.urls.entries()) {
      await expect(connect({ servers: url, reconnect: false }), url).rejects.toThrow(/authorization/i);
      expect(await readFile(cluster.nodes[index]?.configFile ?? '', 'utf8')).toContain(`server_name: "n${index + 1}"`);
      expect(logs[index]?.some((line) => new RegExp(`Name:\\s+n${index + 1}$`).test(line))).toBe(true);
    }
    const nc = await connect({ servers: cluster.urls, user: 'flotilla', pass: 's3cret' });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'GUARDED', subjects: ['guarded.>'], num_replicas: 3 });
      // a new R3 stream takes the publish once its leader is elected (until then: no responders)
      await publishAcked(jetstream(nc), 'guarded.a', 'one');
      // users without accounts live in the global account, $G
      const leader = await cluster.streamLeader('GUARDED', 15_000, { account: '$G' });
      expect(cluster.nodes[leader]?.running).toBe(true);
      await cluster.waitCurrent('GUARDED', 15_000, { account: '$G' });
      expect(await cluster.streamState(0, 'GUARDED', { account: 'nobody' })).toBeUndefined();
    } finally {
      await nc.close();
    }
  });

  it('says which node did not start and why, and refuses a one-node cluster', async () => {
    await expect(NatsCluster.start({ config: 'authorization {' })).rejects.toMatchObject({
      code: 'start_failed',
      message: expect.stringMatching(
        /node n1 of cluster flotilla did not start: nats-server exited \(1\) before ready:\s+nats-server: Parse error/,
      ),
    });
    await expect(NatsCluster.start({ size: 1 })).rejects.toMatchObject({ code: 'invalid_argument' });
  });
});
