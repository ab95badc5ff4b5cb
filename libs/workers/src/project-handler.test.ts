import { draftEvent } from '@flotilla/events';
import { EventLog, type ConversationRef, type Tail } from '@flotilla/log';
import type { Delivery } from '@flotilla/runtime';
import { SnapshotStore } from '@flotilla/state';
import { startNats, uniqueName } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { createProjectHandler } from './project-handler.js';
import { storedDelivery } from './test-support/stored-delivery.js';

/** A log and a snapshot store of their own on `nc`, and an append of one user message to `conversation` at its tail (returning its stream sequence). */
async function projection(nc: NatsConnection, conversation: string) {
  const name = uniqueName('PH');
  const log = await EventLog.open(nc, { streamName: name, subjectPrefix: `t.${name.toLowerCase()}` });
  const store = await SnapshotStore.open(nc, { bucket: `${name}_SNAPSHOTS` });
  const ref: ConversationRef = { tenant: 'acme', conversation };
  let tail: Tail = { streamSeq: 0, lastSeq: 0 };
  const append = async (text: string): Promise<number> => {
    const commit = await log.append(
      ref,
      [draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] })],
      { expected: tail },
    );
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    return commit.streamSeq;
  };
  return { log, store, ref, append, tail: () => tail };
}

describe('project handler', () => {
  it("writes a step's commits once: the newest waits for a successor, which then writes both", async () => {
    await using server = await startNats();
    const nc = await connect({ servers: server.url });
    try {
      const { log, store, ref, append, tail } = await projection(nc, 'one');
      let controller = new AbortController();
      const deliver = (seq: number, laterQueued: () => boolean): Promise<Delivery> =>
        storedDelivery(log, ref, seq, { laterQueued, eventTypes: ['message'], signal: controller.signal });
      const handle = createProjectHandler(log, store, { settleMs: 100 });

      const first = await append('first');
      expect(await handle(await deliver(first, () => false))).toEqual({ ack: true, outcome: 'projected' });
      const written = (await store.get(ref))!;
      expect(written.snapshot.last_stream_seq).toBe(first);

      // the second commit's successor arrives while it settles: it is folded in memory, not
      // written, and its wait ends when the successor comes, not when the period does
      const second = await append('second');
      const third = await append('third');
      const arrivedAt = Date.now() + 30;
      const secondStarted = performance.now();
      expect(await handle(await deliver(second, () => Date.now() >= arrivedAt))).toEqual({
        ack: true,
        outcome: 'coalesced',
      });
      expect(performance.now() - secondStarted).toBeLessThan(80);
      expect((await store.get(ref))!.revision).toBe(written.revision);

      // the newest commit waits out the settle period, then one write covers both
      const started = performance.now();
      expect(await handle(await deliver(third, () => false))).toEqual({ ack: true, outcome: 'projected' });
      expect(performance.now() - started).toBeGreaterThanOrEqual(95);
      const after = (await store.get(ref))!;
      expect(after.snapshot.last_stream_seq).toBe(third);
      expect(after.snapshot.counters.user_messages).toBe(3);
      expect(after.revision).toBe(written.revision + 1);

      // with no settle period every commit is written at once
      const eager = createProjectHandler(log, store, { settleMs: 0 });
      const fourth = await append('fourth');
      const eagerStart = performance.now();
      expect(await eager(await deliver(fourth, () => false))).toEqual({ ack: true, outcome: 'projected' });
      expect(performance.now() - eagerStart).toBeLessThan(95);
      expect((await store.get(ref))!.snapshot.last_stream_seq).toBe(fourth);

      // a shutdown cuts the wait short (the commit then goes back to the group)
      const fifth = await append('fifth');
      const held = handle(await deliver(fifth, () => false));
      await new Promise((resolve) => setTimeout(resolve, 10));
      const abortedAt = performance.now();
      controller.abort();
      await held.catch(() => undefined);
      expect(performance.now() - abortedAt).toBeLessThan(80);

      // commits that keep coming faster than the settle period are still written once per period
      controller = new AbortController();
      const steady = createProjectHandler(log, store, { settleMs: 100 });
      expect(await steady(await deliver(await append('sixth'), () => false))).toEqual({
        ack: true,
        outcome: 'projected',
      });
      const outcomes: string[] = [];
      const streamStarted = Date.now();
      while (Date.now() - streamStarted < 250) {
        const seq = await append('more');
        outcomes.push((await steady(await deliver(seq, () => true))).outcome);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(outcomes.filter((outcome) => outcome === 'projected').length).toBeGreaterThanOrEqual(2);
      expect(outcomes.filter((outcome) => outcome === 'coalesced').length).toBeGreaterThan(outcomes.length / 2);
      expect((await store.get(ref))!.snapshot.last_stream_seq).toBeGreaterThan(tail().streamSeq - 30);
    } finally {
      await nc.close();
    }
  });

  it('a projector behind the log moves a snapshot it does not hold to the tail on the first commit delivered, then passes the commits it read', async () => {
    await using server = await startNats();
    const nc = await connect({ servers: server.url });
    try {
      const { log, store, ref, append } = await projection(nc, 'behind');
      const seqs: number[] = [];
      for (const text of ['one', 'two', 'three', 'four']) seqs.push(await append(text));
      const handle = createProjectHandler(log, store, { settleMs: 0 });
      // the first commit, delivered while the other three are in the stream but not yet delivered here
      const behind = { likelyTail: false };
      expect(await handle(await storedDelivery(log, ref, seqs[0]!, behind))).toEqual({
        ack: true,
        outcome: 'projected',
      });
      const stored = (await store.get(ref))!;
      expect(stored.snapshot.last_stream_seq).toBe(seqs[3]);
      expect(stored.snapshot.counters.user_messages).toBe(4);
      for (const seq of seqs.slice(1))
        expect(await handle(await storedDelivery(log, ref, seq, behind))).toEqual({
          ack: true,
          outcome: 'already_projected',
        });
      expect((await store.get(ref))!.revision).toBe(stored.revision);
    } finally {
      await nc.close();
    }
  });
});
