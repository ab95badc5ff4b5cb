import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchedPull, type ConsumedMessage } from './batched-pull.js';

let server: NatsTestServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

const logger = pino({ level: 'silent' });

/** A stream of its own with one durable pull consumer `group`. */
async function streamWithGroup(ackWaitMs = 30_000): Promise<{ stream: string; subject: string }> {
  const stream = uniqueName('BP');
  const subject = `bp.${stream.toLowerCase()}`;
  await jsm.streams.add({ name: stream, subjects: [`${subject}.>`] });
  await jsm.consumers.add(stream, {
    durable_name: 'group',
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(ackWaitMs),
    max_deliver: -1,
  });
  return { stream, subject };
}

/** Reads from the puller in the background, handing each message to `onMessage`. */
function drain(pull: BatchedPull, onMessage: (message: ConsumedMessage) => void): Promise<void> {
  return (async () => {
    for await (const message of pull) onMessage(message);
  })();
}

const until = async (condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('BatchedPull', () => {
  it('delivers what was pending at start and what lands later, with the delivery read from the reply subject', async () => {
    const { stream, subject } = await streamWithGroup();
    const before = await js.publish(`${subject}.a`, 'before');
    const pull = new BatchedPull({ nc, stream, consumer: 'group', intervalMs: 20, capacity: () => 100, logger });
    const seen: ConsumedMessage[] = [];
    const reading = drain(pull, (message) => {
      seen.push(message);
      message.ack();
    });
    await until(() => seen.length === 1);
    expect(seen[0]).toMatchObject({ seq: before.seq, subject: `${subject}.a`, info: { deliveryCount: 1, pending: 0 } });
    expect(new TextDecoder().decode(seen[0]!.data)).toBe('before');
    expect(Math.abs(seen[0]!.info.timestampNanos / 1e6 - Date.now())).toBeLessThan(10_000);

    // idle now: the next message is delivered by the standing pull, long before it would expire (5 s)
    await new Promise((resolve) => setTimeout(resolve, 200));
    const sentAt = Date.now();
    const later = await js.publish(`${subject}.b`, 'later');
    await until(() => seen.length === 2, 1_000);
    expect(Date.now() - sentAt).toBeLessThan(1_000);
    expect(seen[1]!.seq).toBe(later.seq);

    await pull.close();
    await reading;
    await until(async () => (await jsm.consumers.info(stream, 'group')).num_ack_pending === 0);
  });

  it('takes a burst in a few pulls instead of one delivery per message', async () => {
    const { stream, subject } = await streamWithGroup();
    const pull = new BatchedPull({ nc, stream, consumer: 'group', intervalMs: 50, capacity: () => 1_000, logger });
    const seqs: number[] = [];
    const reading = drain(pull, (message) => {
      seqs.push(message.seq);
      message.ack();
    });
    await new Promise((resolve) => setTimeout(resolve, 100)); // idle: one standing pull
    const pullsBefore = pull.pulls;
    const published = await Promise.all(
      Array.from({ length: 300 }, (_, index) => js.publish(`${subject}.c${index % 7}`, String(index))),
    );
    await until(() => seqs.length === 300);
    expect(seqs).toEqual(published.map((ack) => ack.seq).sort((a, b) => a - b));
    expect(pull.pulls - pullsBefore).toBeLessThan(30);
    await pull.close();
    await reading;
  });

  it('works through a backlog in pulls of half its capacity or more, with no interval between them, once told of freed capacity', async () => {
    const { stream, subject } = await streamWithGroup();
    const backlog = 640;
    for (let sent = 0; sent < backlog; sent += 64)
      await Promise.all(Array.from({ length: 64 }, (_, index) => js.publish(`${subject}.e`, String(sent + index))));
    // a caller of 32 slots that handles each message in a later turn, then says its slot is free (as the commit consumer does)
    let taken = 0;
    let acked = 0;
    const pull = new BatchedPull({
      nc,
      stream,
      consumer: 'group',
      intervalMs: 1_000,
      capacity: () => 32 - taken,
      logger,
    });
    const started = performance.now();
    const reading = drain(pull, (message) => {
      taken += 1;
      setImmediate(() => {
        message.ack();
        acked += 1;
        taken -= 1;
        pull.capacityFreed();
      });
    });
    await until(() => acked === backlog, 10_000);
    // one batch per interval would take 20 s
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(pull.pulls).toBeLessThanOrEqual(backlog / 16 + 3);
    await pull.close();
    await reading;
  });

  it('asks for no more than the caller can take, and redelivers a nak after its delay', async () => {
    const { stream, subject } = await streamWithGroup();
    for (let index = 0; index < 10; index += 1) await js.publish(`${subject}.d`, String(index));
    const held: ConsumedMessage[] = [];
    const pull = new BatchedPull({
      nc,
      stream,
      consumer: 'group',
      intervalMs: 10,
      capacity: () => 3 - held.length,
      logger,
    });
    const redelivered: ConsumedMessage[] = [];
    let nakedSeq = 0;
    let acked = 0;
    const reading = drain(pull, (message) => {
      if (message.seq === nakedSeq) redelivered.push(message);
      else if (nakedSeq === 0) held.push(message);
      else {
        message.ack();
        acked += 1;
      }
    });
    await until(() => held.length === 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(held.map((message) => message.seq)).toEqual([1, 2, 3]);

    // one handed back for 300 ms, the others acked: the rest flows, and the naked one comes back
    const naked = held.shift()!;
    nakedSeq = naked.seq;
    const nakedAt = Date.now();
    naked.nak(300);
    for (const message of held.splice(0)) message.ack();
    await until(() => redelivered.length === 1);
    expect(Date.now() - nakedAt).toBeGreaterThanOrEqual(250);
    expect(redelivered[0]!.info.deliveryCount).toBe(2);
    expect(acked).toBe(7);
    redelivered[0]!.ack();
    await until(async () => {
      const info = await jsm.consumers.info(stream, 'group');
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });
    await pull.close();
    await reading;
  });

  it('keeps pulling after nats-server restarts', async () => {
    const { stream, subject } = await streamWithGroup();
    const pull = new BatchedPull({
      nc,
      stream,
      consumer: 'group',
      intervalMs: 10,
      capacity: () => 100,
      logger,
      idleExpiresMs: 30_000,
    });
    const seen: number[] = [];
    const reading = drain(pull, (message) => {
      seen.push(message.seq);
      message.ack();
    });
    await js.publish(`${subject}.e`, 'one');
    await until(() => seen.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // idle: a standing pull waits at the server
    const reconnected = (async () => {
      for await (const status of nc.status()) if (status.type === 'reconnect') return;
    })();
    await server.restart(); // SIGKILL: the standing pull is gone with the server's memory
    await reconnected;
    const sent = await (async () => {
      for (;;) {
        try {
          return await js.publish(`${subject}.e`, 'two', { timeout: 500 });
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    })();
    // pulled again on reconnect, not when the lost pull would have expired (30 s)
    await until(() => seen.includes(sent.seq), 3_000);
    await pull.close();
    await reading;
  });
});
