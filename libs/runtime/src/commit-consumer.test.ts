import { draftEvent } from '@flotilla/events';
import { PARTITIONS, partitionPriority } from '@flotilla/bus';
import { EventLog, subjectKind } from '@flotilla/log';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AckBatch } from './ack-batch.js';
import type { ConsumedMessage } from './batched-pull.js';
import {
  startCommitConsumer,
  type CommitConsumerOptions,
  type Delivery,
  type HandleOutcome,
} from './commit-consumer.js';
import { ensureDurableConsumer, ensureGroupConsumers } from './durable-consumer.js';
import { ServiceMetrics } from './metrics.js';
import { OwnCommits } from './own-commits.js';

type Seen = { readonly seq: number; readonly deliveryCount: number; readonly laterQueued: boolean };

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

/** A stream of its own with a durable consumer group `group`, and the options to consume it. */
async function group(
  ackWaitMs: number,
  maxAckPending: number,
): Promise<{ log: EventLog; js: JetStreamClient; options: Omit<CommitConsumerOptions, 'handler' | 'concurrency'> }> {
  const name = uniqueName('CC');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  await ensureDurableConsumer(log.jsm, {
    stream: name,
    name: 'group',
    filterSubjects: [`${log.subjectPrefix}.>`],
    ackWaitMs,
    maxAckPending,
  });
  const js = jetstream(nc);
  const options = {
    js,
    stream: name,
    consumer: 'group',
    subjectPrefix: log.subjectPrefix,
    ackWaitMs,
    logger: pino({ level: 'silent' }),
    metrics: new ServiceMetrics('test'),
  };
  return { log, js, options };
}

describe('commit consumer', () => {
  it("hands a self-continuing group its own commits from its own process, before acknowledging the commit that woke it; the server delivers it only the others' kinds", async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const own = new OwnCommits();
    // the step workers' group: its log appends `step` commits, its consumer is delivered every kind but those
    const worker = await EventLog.open(nc, {
      streamName: name,
      subjectPrefix: prefix,
      writer: 'step-worker',
      onAppended: (ref, message) => own.appended(ref, message),
    });
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const runner = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'tool-runner' });
    const partitions = await ensureGroupConsumers(worker.jsm, {
      stream: name,
      group: 'step-worker',
      subjectPrefix: prefix,
      instanceId: 'worker-a',
      ackWaitMs: 30_000,
      maxAckPending: 100,
    });
    const ref = { tenant: 'acme', conversation: 'chain' };
    const say = (text: string) => [
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    ];
    const seen: { seq: number; subject: string; kind: string | undefined; deliveryCount: number }[] = [];
    let acked = 0;
    const handler = async (delivery: Delivery): Promise<HandleOutcome> => {
      seen.push({
        seq: delivery.streamSeq,
        subject: delivery.subject,
        kind: subjectKind(prefix, delivery.subject),
        deliveryCount: delivery.deliveryCount,
      });
      const tail = await worker.tail(ref);
      // two commits of its own after the gateway's, one after another: each is handed back to it
      if (
        seen.filter((entry) => entry.kind === 'step').length < 2 &&
        tail.streamSeq === delivery.streamSeq &&
        delivery.streamSeq !== runnerSeq
      )
        await worker.append(ref, say('a step'), { expected: tail });
      return { ack: true, outcome: 'ok' };
    };
    let runnerSeq = -1;
    const first = await gateway.append(ref, say('hello'), { expected: { streamSeq: 0, lastSeq: 0 } });
    const consumer = await startCommitConsumer({
      js: jetstream(nc),
      stream: name,
      consumer: 'step-worker',
      partitions,
      subjectPrefix: prefix,
      ackWaitMs: 30_000,
      logger: pino({ level: 'silent' }),
      metrics: new ServiceMetrics('test'),
      concurrency: 4,
      handler,
      ownCommits: own,
    });
    try {
      await expect.poll(() => seen.length).toBe(3);
      // the tool runner's commit is delivered by the server
      const tail = await worker.tail(ref);
      runnerSeq = (await runner.append(ref, say('a result'), { expected: tail })).streamSeq;
      await expect.poll(() => seen.length).toBe(4);
      // the conversation's partition's consumer delivered them (stored as <prefix>.<tenant>.<conversation>.<kind>.<partition>)
      const partitionConsumer = `step-worker-p${seen[0]!.subject.split('.').at(-1)}`;
      await expect
        .poll(async () => (acked = (await worker.jsm.consumers.info(name, partitionConsumer)).ack_floor.stream_seq))
        .toBe(runnerSeq);
      expect(seen.map((entry) => entry.kind)).toEqual(['user', 'step', 'step', 'tool']);
      expect(seen[0]!.seq).toBe(first.streamSeq);
      // the server never delivered the group's own commits: nothing pending, nothing redelivered
      const info = await worker.jsm.consumers.info(name, partitionConsumer);
      expect(info.delivered.consumer_seq).toBe(2);
      expect((await worker.jsm.consumers.info(name, 'step-worker')).delivered.consumer_seq).toBe(0);
      expect(info.num_pending).toBe(0);
      expect(acked).toBe(runnerSeq);
    } finally {
      await consumer.stop();
    }
  });

  it('tells a handler a later commit is queued behind it only when its sequence is higher', async () => {
    const { log, js, options } = await group(30_000, 100);
    const subject = log.subject({ tenant: 'acme', conversation: 'one' });
    const older = (await js.publish(subject, 'older')).seq;
    const newer = (await js.publish(subject, 'newer')).seq;

    // The older commit is handed back for a short while; the newer one is delivered meanwhile and
    // is still being handled when the older one's redelivery queues behind it.
    const seen: Seen[] = [];
    let releaseNewer!: () => void;
    const newerHeld = new Promise<void>((resolve) => (releaseNewer = resolve));
    const done = new Promise<void>((resolve) => {
      const handler = async (delivery: Delivery): Promise<HandleOutcome> => {
        if (delivery.streamSeq === older && delivery.deliveryCount === 1)
          return { ack: false, outcome: 'later', delayMs: 300 };
        if (delivery.streamSeq === newer) {
          setTimeout(releaseNewer, 1_000);
          await newerHeld;
        }
        seen.push({
          seq: delivery.streamSeq,
          deliveryCount: delivery.deliveryCount,
          laterQueued: delivery.laterQueued(),
        });
        if (seen.length === 2) resolve();
        return { ack: true, outcome: 'ok' };
      };
      void startCommitConsumer({ ...options, concurrency: 8, handler }).then((consumer) =>
        done.finally(() => consumer.stop()),
      );
    });
    await done;
    // the newer commit is the tail although an (older) redelivery queued behind it; the older one is not
    expect(seen).toEqual([
      { seq: newer, deliveryCount: 1, laterQueued: false },
      { seq: older, deliveryCount: 2, laterQueued: true },
    ]);
  });

  it("hands a conversation's commits one after another, or all at once (in delivery order) with concurrentPerConversation", async () => {
    for (const concurrentPerConversation of [false, true]) {
      const { log, js, options } = await group(30_000, 100);
      const subject = log.subject({ tenant: 'acme', conversation: 'one' });
      const seqs: number[] = [];
      for (const body of ['a', 'b', 'c']) seqs.push((await js.publish(subject, body)).seq);
      // each handler waits until all three were handed over, or 300 ms
      const handed: number[] = [];
      let release!: () => void;
      const allHanded = new Promise<void>((resolve) => (release = resolve));
      const together: boolean[] = [];
      const done = new Promise<void>((resolve) => {
        const handler = async (delivery: Delivery): Promise<HandleOutcome> => {
          handed.push(delivery.streamSeq);
          if (handed.length === 3) release();
          together.push(
            await Promise.race([
              allHanded.then(() => true),
              new Promise<boolean>((wait) => setTimeout(() => wait(false), 300)),
            ]),
          );
          if (together.length === 3) resolve();
          return { ack: true, outcome: 'ok' };
        };
        void startCommitConsumer({ ...options, concurrency: 8, handler, concurrentPerConversation }).then((consumer) =>
          done.finally(() => consumer.stop()),
        );
      });
      await done;
      expect(handed).toEqual(seqs);
      // one after another, only the last sees all three handed over
      expect(together).toEqual(concurrentPerConversation ? [true, true, true] : [false, false, true]);
    }
  });

  it("reads a commit's event types and seqs from its headers, and none from a foreign message", async () => {
    const { log, js, options } = await group(30_000, 100);
    const ref = { tenant: 'acme', conversation: 'spans' };
    const source = { ...ref, source: 'user' as const };
    const first = await log.append(
      ref,
      [draftEvent(source, 'message', { role: 'user', content: [{ type: 'text', text: 'hi' }] })],
      { expected: { streamSeq: 0, lastSeq: 0 } },
    );
    const message = (text: string) =>
      draftEvent(source, 'message', { role: 'user', content: [{ type: 'text', text }] });
    await log.append(
      ref,
      [
        message('a'),
        draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'running', reason: 'run' }),
        message('b'),
      ],
      {
        expected: { streamSeq: first.streamSeq, lastSeq: first.lastSeq },
      },
    );
    await js.publish(log.subject(ref), 'not a commit');
    const seen: { types: readonly string[]; span: unknown }[] = [];
    const done = new Promise<void>((resolve) => {
      const handler = async (delivery: Delivery): Promise<HandleOutcome> => {
        seen.push({ types: delivery.eventTypes(), span: delivery.eventSpan() });
        if (seen.length === 3) resolve();
        return { ack: true, outcome: 'ok' };
      };
      void startCommitConsumer({ ...options, concurrency: 1, handler }).then((consumer) =>
        done.finally(() => consumer.stop()),
      );
    });
    await done;
    expect(seen).toEqual([
      { types: ['message'], span: { firstSeq: 1, lastSeq: 1 } },
      { types: ['message', 'state_change'], span: { firstSeq: 2, lastSeq: 4 } },
      { types: [], span: undefined },
    ]);
  });

  it('acks every handled commit (acks are sent in batches), and nothing is redelivered', async () => {
    const { log, js, options } = await group(1_000, 1_000);
    const name = options.stream;
    const commits = 200;
    await Promise.all(
      Array.from({ length: commits }, (_, index) =>
        js.publish(log.subject({ tenant: 'acme', conversation: `c${index % 20}` }), `commit ${index}`),
      ),
    );
    const handled: number[] = [];
    const consumer = await startCommitConsumer({
      ...options,
      concurrency: 64,
      handler: async (delivery) => {
        handled.push(delivery.streamSeq);
        return { ack: true, outcome: 'ok' };
      },
    });
    // (a commit still in its handler at a stop is handed back, not acked: wait until none is)
    while (handled.length < commits || consumer.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // acks go out while the consumer runs (the server applies them asynchronously: allow it well
    // under the ack wait to show them all)
    let info = await log.jsm.consumers.info(name, 'group');
    for (const deadline = Date.now() + 600; info.num_ack_pending > 0 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      info = await log.jsm.consumers.info(name, 'group');
    }
    await consumer.stop();
    expect(info.num_ack_pending).toBe(0);
    expect(info.ack_floor.stream_seq).toBe(commits);
    // past the ack wait, nothing comes back
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await log.jsm.consumers.info(name, 'group')).num_redelivered).toBe(0);
    expect(new Set(handled).size).toBe(commits);
  });

  it('holds acks until the next append, which carries them, or until the hold ends', async () => {
    const { log, js, options } = await group(30_000, 100);
    const acks = new AckBatch(1_000);
    const writer = await EventLog.open(nc, {
      streamName: options.stream,
      subjectPrefix: log.subjectPrefix,
      beforePublish: () => acks.flush(),
    });
    const ref = { tenant: 'acme', conversation: 'held' };
    await js.publish(log.subject(ref), 'first');
    await js.publish(log.subject(ref), 'second');
    let handled = 0;
    const consumer = await startCommitConsumer({
      ...options,
      concurrency: 4,
      acks,
      handler: async () => {
        handled += 1;
        return { ack: true, outcome: 'ok' };
      },
    });
    const pendingAcks = async (): Promise<number> =>
      (await log.jsm.consumers.info(options.stream, 'group')).num_ack_pending;
    try {
      while (handled < 2 || consumer.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      // handled, but the acks are held: the server still counts both as pending
      expect(acks.held).toBe(2);
      expect(await pendingAcks()).toBe(2);
      // an append sends them in its write
      const other = { tenant: 'acme', conversation: 'other' };
      await writer.append(
        other,
        [
          draftEvent({ ...other, source: 'user' }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'hi' }],
          }),
        ],
        { expected: { streamSeq: 0, lastSeq: 0 } },
      );
      // (well before the hold ends)
      let floor = 0;
      for (const deadline = Date.now() + 500; floor < 2 && Date.now() < deadline;) {
        floor = (await log.jsm.consumers.info(options.stream, 'group')).ack_floor.stream_seq;
        if (floor < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(floor).toBe(2);
      // without an append, the hold's end sends them (the appended commit was delivered and handled too)
      while (handled < 3 || consumer.inFlight() > 0) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(acks.held).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(acks.held).toBe(0);
      let pending = await pendingAcks();
      for (const deadline = Date.now() + 500; pending > 0 && Date.now() < deadline; pending = await pendingAcks())
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await pendingAcks()).toBe(0);
    } finally {
      await consumer.stop();
    }
  });

  it('refuses a negative or fractional hold', () => {
    expect(() => new AckBatch(-1)).toThrow(/holdMs/);
    expect(() => new AckBatch(0.5)).toThrow(/holdMs/);
    expect(() => new AckBatch(20, 0)).toThrow(/maxHeld/);
  });

  it('sends held acks at once when maxHeld are held (a backlog must not fill the group’s max ack pending)', () => {
    const acks = new AckBatch(60_000, 3);
    const acked: number[] = [];
    const message = (seq: number): ConsumedMessage => ({
      subject: 's',
      seq,
      data: new Uint8Array(),
      info: { deliveryCount: 1, pending: 0, timestampNanos: 0 },
      ack: () => acked.push(seq),
      nak: () => undefined,
      working: () => undefined,
    });
    acks.add(message(1));
    acks.add(message(2));
    expect(acked).toEqual([]);
    acks.add(message(3));
    expect(acked).toEqual([1, 2, 3]);
    expect(acks.held).toBe(0);
    acks.add(message(4));
    acks.flush();
    expect(acked).toEqual([1, 2, 3, 4]);
  });

  it("keeps a long handler's commit from being redelivered while it runs", async () => {
    const { log, js, options } = await group(1_000, 100);
    await js.publish(log.subject({ tenant: 'acme', conversation: 'slow' }), 'slow');
    await js.publish(log.subject({ tenant: 'acme', conversation: 'quick' }), 'quick');
    const deliveries: number[] = [];
    const consumer = await startCommitConsumer({
      ...options,
      concurrency: 4,
      handler: async (delivery) => {
        deliveries.push(delivery.streamSeq);
        if (delivery.streamSeq === 1) await new Promise((resolve) => setTimeout(resolve, 2_600));
        return { ack: true, outcome: 'ok' };
      },
    });
    try {
      while (consumer.inFlight() > 0 || deliveries.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      // well past two ack waits: each commit was delivered once
      expect(deliveries.sort()).toEqual([1, 2]);
      expect((await log.jsm.consumers.info(options.stream, 'group')).num_redelivered).toBe(0);
    } finally {
      await consumer.stop();
    }
  });
});

describe('partitioned groups', () => {
  /** Instance ids whose priorities never tie on a partition, so each partition has one holder among them. */
  const distinctIds = (count: number): string[] => {
    const ids: string[] = [];
    for (let candidate = 0; ids.length < count; candidate += 1) {
      const id = `worker-${candidate}`;
      const clash = Array.from({ length: PARTITIONS }, (_, partition) => partition).some((partition) =>
        ids.some((other) => partitionPriority(other, partition) === partitionPriority(id, partition)),
      );
      if (!clash) ids.push(id);
    }
    return ids;
  };

  it("delivers each conversation's commits to the live instance holding its partition, and moves them at once when it dies or a better one starts", async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const [a, b, c] = distinctIds(3) as [string, string, string];
    const handled = new Map<string, Set<string>>();
    const partitionOf = new Map<string, number>();
    let count = 0;
    const start = async (instance: string) => {
      const connection = await connect({ servers: server.url });
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
      const consumer = await startCommitConsumer({
        js: jetstream(connection),
        stream: name,
        consumer: 'step-worker',
        partitions,
        subjectPrefix: prefix,
        ackWaitMs: 30_000,
        logger: pino({ level: 'silent' }),
        metrics: new ServiceMetrics('test'),
        concurrency: 64,
        handler: async (delivery) => {
          const conversation = delivery.ref!.conversation;
          partitionOf.set(conversation, Number(delivery.subject.split('.').at(-1)));
          handled.set(conversation, (handled.get(conversation) ?? new Set()).add(instance));
          count += 1;
          return { ack: true, outcome: 'ok' };
        },
      });
      return { connection, consumer };
    };
    const conversations = Array.from({ length: 64 }, (_, index) => `c${index}`);
    const tails = new Map<string, { streamSeq: number; lastSeq: number }>(
      conversations.map((conversation) => [conversation, { streamSeq: 0, lastSeq: 0 }]),
    );
    const round = async (): Promise<void> => {
      const before = count;
      handled.clear();
      for (const conversation of conversations) {
        const ref = { tenant: 'acme', conversation };
        const appended = await gateway.append(
          ref,
          [
            draftEvent({ ...ref, source: 'user' }, 'message', {
              role: 'user',
              content: [{ type: 'text', text: 'hi' }],
            }),
          ],
          { expected: tails.get(conversation)! },
        );
        tails.set(conversation, { streamSeq: appended.streamSeq, lastSeq: appended.lastSeq });
      }
      await expect.poll(() => count - before, { timeout: 10_000 }).toBe(conversations.length);
    };
    /** Who handled each conversation this round, and who holds its partition among `live` (the best priority). */
    const holders = (live: readonly string[]) =>
      conversations.map((conversation) => {
        const partition = partitionOf.get(conversation)!;
        const best = [...live].sort((x, y) => partitionPriority(x, partition) - partitionPriority(y, partition))[0];
        return { conversation, handledBy: [...handled.get(conversation)!], holder: best };
      });

    /** Until every partition's consumer holds a waiting pull of each of `instances` live instances. */
    const pullsWaiting = async (instances: number): Promise<void> => {
      await expect
        .poll(
          async () =>
            Math.min(
              ...(await Promise.all(
                Array.from(
                  { length: PARTITIONS },
                  async (_, partition) =>
                    (await gateway.jsm.consumers.info(name, `step-worker-p${partition}`)).num_waiting,
                ),
              )),
            ),
          { timeout: 10_000 },
        )
        .toBeGreaterThanOrEqual(instances);
    };
    const first = await start(a);
    const second = await start(b);
    try {
      await pullsWaiting(2);
      await round();
      for (const entry of holders([a, b])) expect(entry.handledBy).toEqual([entry.holder]);
      expect(new Set(holders([a, b]).map((entry) => entry.holder)).size).toBe(2);

      // the holder of half the partitions dies without a word (its connection gone, as a SIGKILL leaves it)
      await first.connection.close();
      await round();
      for (const entry of holders([b])) expect(entry.handledBy).toEqual([b]);

      // a new instance takes the partitions it ranks best on at once
      const third = await start(c);
      try {
        await pullsWaiting(2);
        await round();
        const now = holders([b, c]);
        for (const entry of now) expect(entry.handledBy).toEqual([entry.holder]);
        expect(now.some((entry) => entry.holder === c)).toBe(true);
      } finally {
        await third.consumer.stop();
        await third.connection.close();
      }
    } finally {
      await second.consumer.stop();
      await second.connection.close();
      await first.consumer.stop().catch(() => undefined);
    }
  }, 60_000);

  it("hands a partition's commit back when the instance holding the partition is full, so an idle sibling runs it at once", async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const [busy, idle] = distinctIds(2) as [string, string];
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const handled: { conversation: string; partition: number; instance: string; deliveryCount: number }[] = [];
    const start = async (instance: string) => {
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
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
        // one commit at a time and none held beyond it
        concurrency: 1,
        handler: async (delivery) => {
          handled.push({
            conversation: delivery.ref!.conversation,
            partition: Number(delivery.subject.split('.').at(-1)),
            instance,
            deliveryCount: delivery.deliveryCount,
          });
          if (instance === busy) await blocked;
          return { ack: true, outcome: 'ok' };
        },
      });
      return { consumer, metrics };
    };
    const first = await start(busy);
    const second = await start(idle);
    try {
      // the first commit keeps `busy` full (it holds every partition it ranks best on)
      const append = (conversation: string) =>
        gateway.append(
          { tenant: 'acme', conversation },
          [
            draftEvent({ tenant: 'acme', conversation, source: 'user' }, 'message', {
              role: 'user',
              content: [{ type: 'text', text: 'hi' }],
            }),
          ],
          { expected: { streamSeq: 0, lastSeq: 0 } },
        );
      const holds = (partition: number) => partitionPriority(busy, partition) < partitionPriority(idle, partition);
      let blocker = 0;
      for (; ; blocker += 1) {
        await append(`first-${blocker}`);
        await expect.poll(() => handled.length, { timeout: 5_000 }).toBe(blocker + 1);
        if (handled.at(-1)!.instance === busy) break;
      }
      // while it is full, every other conversation is run by the idle one, those of busy's partitions included
      const others = Array.from({ length: 12 }, (_, index) => `later-${index}`);
      for (const conversation of others) await append(conversation);
      await expect
        .poll(() => handled.filter((entry) => entry.conversation.startsWith('later-')).length, { timeout: 10_000 })
        .toBe(others.length);
      const later = handled.filter((entry) => entry.conversation.startsWith('later-'));
      expect(later.every((entry) => entry.instance === idle)).toBe(true);
      const handedBack = later.filter((entry) => holds(entry.partition));
      expect(handedBack.length).toBeGreaterThan(0);
      expect(
        (await first.metrics.registry.getSingleMetricAsString('flotilla_commits_handled_total')).includes(
          'outcome="handed_back_full"',
        ),
      ).toBe(true);
    } finally {
      release();
      await first.consumer.stop();
      await second.consumer.stop();
    }
  }, 60_000);
});
