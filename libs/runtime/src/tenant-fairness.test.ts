import { draftEvent } from '@flotilla/events';
import { EventLog } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCommitConsumer, type Delivery, type Fairness, type HandleOutcome } from './commit-consumer.js';
import { ensureGroupConsumers } from './durable-consumer.js';
import { ServiceMetrics } from './metrics.js';

let server: NatsTestServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

const FLOOD = 400;
const SMALL = 8;
const CONCURRENCY = 8;

/**
 * Tenant `flood` appends one commit to each of FLOOD conversations, then tenant `small` one to
 * each of SMALL: the small tenant's commits are behind the whole flood in every partition. A
 * partitioned group (the step workers' consumers) with CONCURRENCY slots handles them, each
 * holding its slot for 20 ms (a model call). Returns the tenants in the order their commits
 * started, once every commit was handled and acknowledged.
 */
async function floodThenSmall(
  fairness: Fairness | undefined,
): Promise<{ order: string[]; redelivered: number; handedBack: number }> {
  const name = uniqueName('FAIR');
  const prefix = `t.${name.toLowerCase()}`;
  const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
  const say = (ref: { tenant: string; conversation: string }) => [
    draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'go' }] }),
  ];
  for (let at = 0; at < FLOOD; at += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, index) => ({ tenant: 'flood', conversation: `c${at + index}` })).map((ref) =>
        gateway.append(ref, say(ref), { expected: { streamSeq: 0, lastSeq: 0 } }),
      ),
    );
  }
  for (let index = 0; index < SMALL; index += 1) {
    const ref = { tenant: 'small', conversation: `c${index}` };
    await gateway.append(ref, say(ref), { expected: { streamSeq: 0, lastSeq: 0 } });
  }
  const partitions = await ensureGroupConsumers(gateway.jsm, {
    stream: name,
    group: 'step-worker',
    subjectPrefix: prefix,
    instanceId: 'worker-a',
    ackWaitMs: 30_000,
    maxAckPending: 2_000,
  });
  const order: string[] = [];
  let redelivered = 0;
  // with a lookahead, the first slots' commits are held until every commit reached the process: what
  // is served next is then the queue's choice alone, not how fast the server delivered each partition
  let open: () => void = () => undefined;
  const gate = fairness ? new Promise<void>((resolve) => (open = resolve)) : Promise.resolve();
  const handler = async (delivery: Delivery): Promise<HandleOutcome> => {
    order.push(delivery.ref!.tenant);
    if (delivery.deliveryCount > 1) redelivered += 1;
    await gate;
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { ack: true, outcome: 'stepped' };
  };
  const metrics = new ServiceMetrics('test');
  const consumer = await startCommitConsumer({
    js: jetstream(nc),
    stream: name,
    consumer: 'step-worker',
    partitions,
    subjectPrefix: prefix,
    ackWaitMs: 30_000,
    logger: pino({ level: 'silent' }),
    metrics,
    concurrency: CONCURRENCY,
    handler,
    ...(fairness ? { fairness } : {}),
  });
  const consumers = ['step-worker', ...partitions.map((partition) => partition.consumer)];
  const delivered = async (): Promise<number> =>
    (await Promise.all(consumers.map((consumer) => gateway.jsm.consumers.info(name, consumer)))).reduce(
      (sum, info) => sum + info.num_ack_pending,
      0,
    );
  try {
    if (fairness) {
      await expect.poll(delivered, { timeout: 20_000 }).toBe(FLOOD + SMALL);
      open();
    }
    await expect.poll(() => order.length, { timeout: 20_000 }).toBe(FLOOD + SMALL);
    // every commit acknowledged: nothing pending or waiting for an ack on any of the group's consumers
    await expect
      .poll(async () => {
        const infos = await Promise.all(consumers.map((consumer) => gateway.jsm.consumers.info(name, consumer)));
        return infos.reduce((sum, info) => sum + info.num_pending + info.num_ack_pending, 0);
      })
      .toBe(0);
  } finally {
    await consumer.stop();
  }
  // a commit of a partition's that came while every slot was taken was handed back once (delivered again)
  const handedBack =
    (await metrics.commits.get()).values.find((value) => value.labels.outcome === 'handed_back_full')?.value ?? 0;
  return { order, redelivered, handedBack };
}

/** Where the small tenant's last commit started, among all starts (0-based). */
const lastSmall = (order: readonly string[]): number => order.lastIndexOf('small');

describe('tenant fairness in a partitioned group', () => {
  it("serves another tenant's commits within its share while one tenant floods the group, each handled once", async () => {
    const { order, redelivered, handedBack } = await floodThenSmall({
      lookahead: 1_000,
      lookaheadBytes: 0,
      reserve: 1,
    });
    // the slots busy when the small tenant's commits came, then at least every other slot is theirs
    expect(lastSmall(order)).toBeLessThan(CONCURRENCY + 2 * SMALL);
    expect(order.filter((tenant) => tenant === 'small')).toHaveLength(SMALL);
    expect([redelivered, handedBack]).toEqual([0, 0]);
  });

  it('without a lookahead serves them in delivery order: behind the flood', async () => {
    const { order, redelivered, handedBack } = await floodThenSmall(undefined);
    expect(lastSmall(order)).toBeGreaterThan(FLOOD / 2);
    // nothing redelivered but what was handed back (one instance: no sibling took them); each handled once (above)
    expect(redelivered).toBeLessThanOrEqual(handedBack);
  });

  it('keeps commits waiting for a slot from being redelivered while they wait longer than the ack wait', async () => {
    const name = uniqueName('FAIR');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    for (let index = 0; index < 12; index += 1) {
      const ref = { tenant: index % 2 === 0 ? 'a' : 'b', conversation: `c${index}` };
      await gateway.append(
        ref,
        [draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'go' }] })],
        { expected: { streamSeq: 0, lastSeq: 0 } },
      );
    }
    const ackWaitMs = 1_000;
    const partitions = await ensureGroupConsumers(gateway.jsm, {
      stream: name,
      group: 'step-worker',
      subjectPrefix: prefix,
      instanceId: 'worker-a',
      ackWaitMs,
      maxAckPending: 100,
    });
    const deliveries: number[] = [];
    const consumer = await startCommitConsumer({
      js: jetstream(nc),
      stream: name,
      consumer: 'step-worker',
      partitions,
      subjectPrefix: prefix,
      ackWaitMs,
      logger: pino({ level: 'silent' }),
      metrics: new ServiceMetrics('test'),
      // one slot, 300 ms a commit: the last of 12 waits ~3.3 s, over three ack waits
      concurrency: 1,
      fairness: { lookahead: 100, lookaheadBytes: 0, reserve: 0 },
      handler: async (delivery) => {
        deliveries.push(delivery.deliveryCount);
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { ack: true, outcome: 'stepped' };
      },
    });
    try {
      await expect.poll(() => deliveries.length, { timeout: 20_000 }).toBe(12);
      await new Promise((resolve) => setTimeout(resolve, ackWaitMs + 500)); // a redelivery would show by now
      expect(deliveries).toEqual(Array.from({ length: 12 }, () => 1));
    } finally {
      await consumer.stop();
    }
  });
});
