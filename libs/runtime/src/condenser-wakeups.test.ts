import { CONDENSER_WAKEUPS } from '@flotilla/bus';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CondenserWakeups,
  condenserWakeupSubject,
  ensureCondenserWakeups,
  parseCondenserWakeup,
  removeRetiredCondenserGroup,
} from './condenser-wakeups.js';

let server: NatsTestServer;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

const ref = { tenant: 'acme', conversation: 'c1' };

async function stored(): Promise<number> {
  return (await jsm.streams.info(CONDENSER_WAKEUPS.stream)).state.messages;
}

describe('CondenserWakeups', () => {
  it('stores one wake-up per decision (the same reason and position twice is one), a second one for a wait nobody answered, and the commit trace', async () => {
    await ensureCondenserWakeups(jsm, 1);
    await jsm.streams.purge(CONDENSER_WAKEUPS.stream);
    const wakeups = new CondenserWakeups(jetstream(nc), () => ensureCondenserWakeups(jsm, 1));
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await wakeups.wake(ref, 'condense', 7, { traceparent });
    await wakeups.wake(ref, 'condense', 7);
    await wakeups.wake(ref, 'title', 7);
    await wakeups.wake(ref, 'condense', 7, { again: true });
    expect(await stored()).toBe(3);
    const first = await jsm.streams.getMessage(CONDENSER_WAKEUPS.stream, {
      seq: (await jsm.streams.info(CONDENSER_WAKEUPS.stream)).state.first_seq,
    });
    expect(first?.subject).toBe(condenserWakeupSubject(ref));
    expect(first?.header.get('traceparent')).toBe(traceparent);
    expect(parseCondenserWakeup(first!.data)).toEqual({ ok: true, wakeup: { v: 1, reason: 'condense', at: 7 } });
    expect(parseCondenserWakeup(new TextEncoder().encode('{"v":2}'))).toMatchObject({ ok: false });
  });

  it('makes the queue again when it was removed, and the wake-up lands in it', async () => {
    await ensureCondenserWakeups(jsm, 1);
    await jsm.streams.delete(CONDENSER_WAKEUPS.stream);
    const wakeups = new CondenserWakeups(jetstream(nc), () => ensureCondenserWakeups(jsm, 1));
    await wakeups.wake(ref, 'title', 3);
    expect(await stored()).toBe(1);
    // a work queue: the condenser's ack removes it
    await jsm.consumers.add(CONDENSER_WAKEUPS.stream, {
      durable_name: CONDENSER_WAKEUPS.group,
      ack_policy: AckPolicy.Explicit,
    });
    const message = await (
      await jetstream(nc).consumers.get(CONDENSER_WAKEUPS.stream, CONDENSER_WAKEUPS.group)
    ).next({ expires: 2_000 });
    await message?.ackAck();
    expect(await stored()).toBe(0);
  });

  it("removes an older condenser's group on the events stream once, and says when there was none", async () => {
    await jsm.streams.add({ name: 'OLD_EVENTS', subjects: ['old.ev.*.*'] });
    await jsm.consumers.add('OLD_EVENTS', { durable_name: 'condenser', ack_policy: AckPolicy.Explicit });
    await jsm.consumers.add('OLD_EVENTS', { durable_name: 'step-worker', ack_policy: AckPolicy.Explicit });
    expect(await removeRetiredCondenserGroup(jsm, 'OLD_EVENTS')).toBe(true);
    expect(await removeRetiredCondenserGroup(jsm, 'OLD_EVENTS')).toBe(false);
    const left: string[] = [];
    for await (const consumer of jsm.consumers.list('OLD_EVENTS')) left.push(consumer.name);
    expect(left).toEqual(['step-worker']);
  });
});
