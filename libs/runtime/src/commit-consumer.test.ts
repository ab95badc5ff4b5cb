// What the commit consumer hands its handler, and when: a group's own commits, the queued-behind
// flag, a conversation's commits in order, a commit's event types and seqs. (Acks and redelivery:
// commit-consumer-acks.test.ts; partitioned groups: commit-consumer-partitions.test.ts.)
import { draftEvent } from '@flotilla/events';
import { EventLog, subjectKind } from '@flotilla/log';
import { uniqueName } from '@flotilla/testing';
import { jetstream } from '@nats-io/jetstream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startCommitConsumer, type Delivery, type HandleOutcome } from './commit-consumer.js';
import { ensureGroupConsumers } from './durable-consumer.js';
import { ServiceMetrics } from './metrics.js';
import { OwnCommits } from './own-commits.js';
import { group, nc, startNatsForFile } from './test-support/commit-consumer-fixture.js';

type Seen = { readonly seq: number; readonly deliveryCount: number; readonly laterQueued: boolean };

startNatsForFile();

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
});
