// The commit consumer's acks: sent in batches, held until the next append or the hold's end, sent
// at once past maxHeld, and a long handler's commit kept from redelivery.
import { draftEvent } from '@flotilla/events';
import { EventLog } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { AckBatch } from './ack-batch.js';
import type { ConsumedMessage } from './batched-pull.js';
import { startCommitConsumer } from './commit-consumer.js';
import { group, nc, startNatsForFile } from './test-support/commit-consumer-fixture.js';

startNatsForFile();

describe('commit consumer', () => {
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
