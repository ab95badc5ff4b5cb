import { SCHEDULES } from '@flotilla/bus';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SchedulesError } from './errors.js';
import type { DeliveredRun } from './run-decision.js';
import { RunConsumer } from './run-consumer.js';
import { schedulesSupported, ScheduleStore } from './schedule-store.js';
import { definitionSubject, runSubject } from './schedule-stream.js';

let nats: NatsTestServer;
let nc: NatsConnection;
let store: ScheduleStore;

beforeAll(async () => {
  nats = await startNats({ preferExternal: false });
  nc = await connect({ servers: nats.url });
  store = await ScheduleStore.open(nc);
});
afterAll(async () => {
  await nc?.close();
  await nats?.[Symbol.asyncDispose]();
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const action = { type: 'create_conversation' as const, message: 'hi' };
const storedRuns = async (tenant: string, id: string): Promise<number> => {
  const info = await store.jsm.streams.info(SCHEDULES.stream, { subjects_filter: runSubject(tenant, id) });
  return info.state.subjects?.[runSubject(tenant, id)] ?? 0;
};

describe('the server version schedules need', () => {
  it('is 2.14 or newer', () => {
    for (const version of ['2.14.0', '2.15.1', '2.14.0-RC.1', '3.0.0'])
      expect(schedulesSupported(version), version).toBe(true);
    for (const version of ['2.12.4', '2.13.0', '2.9.10', 'unknown', ''])
      expect(schedulesSupported(version), version).toBe(false);
  });
});

describe('schedules on nats-server', () => {
  it('runs that nobody takes collapse into the latest one; a consumer started later is delivered one run', async () => {
    const schedule = await store.create('acme', { when: { every: '1m' }, action, missed_runs: 'run_once' });
    // an every-second definition (the API's shortest interval is the operator's; the store takes what it is given)
    await store.publishDefinition({ ...schedule, when: { cron: '* * * * * *' } });
    await sleep(3_200);
    expect(await storedRuns('acme', schedule.id)).toBe(1);
    // nothing fires any more: the consumer is delivered what waits, and only that
    await store.jsm.streams.purge(SCHEDULES.stream, { filter: definitionSubject('acme', schedule.id) });
    const seen: DeliveredRun[] = [];
    const consumer = await RunConsumer.start(nc, store.jsm, async (run) => void seen.push(run));
    await sleep(1_500);
    await consumer.stop();
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      message: { tenant: 'acme', schedule: schedule.id, generation: 0, kind: 'scheduled' },
      next: expect.any(String),
    });
    await store.remove('acme', schedule.id);
  });

  it('pausing cancels the definition and drops a waiting run; resuming publishes it again with a new generation; deleting removes both', async () => {
    const schedule = await store.create('acme', { when: { every: '1h' }, action, missed_runs: 'skip' });
    expect(await store.hasDefinition('acme', schedule.id)).toBe(true);
    await store.runNow(schedule);
    expect(await store.lastRunSeq('acme', schedule.id)).toBeGreaterThan(0);
    const paused = await store.pause('acme', schedule.id);
    expect(paused).toMatchObject({ status: 'paused', generation: 1 });
    expect(await store.hasDefinition('acme', schedule.id)).toBe(false);
    expect(await store.lastRunSeq('acme', schedule.id)).toBeUndefined();
    const resumed = await store.resume('acme', schedule.id);
    expect(resumed).toMatchObject({ status: 'active', generation: 2 });
    expect(await store.hasDefinition('acme', schedule.id)).toBe(true);
    const definition = await store.jsm.streams.getMessage(SCHEDULES.stream, {
      last_by_subj: definitionSubject('acme', schedule.id),
    });
    expect(definition?.json()).toMatchObject({ generation: 2, kind: 'scheduled' });
    expect(definition?.header.get('Nats-Schedule')).toBe('@every 3600s');
    expect(await store.remove('acme', schedule.id)).toBe(true);
    expect(await store.get('acme', schedule.id)).toBeUndefined();
    expect(await store.hasDefinition('acme', schedule.id)).toBe(false);
    expect(await store.remove('acme', schedule.id)).toBe(false);
  });

  it('a message on a run subject that is not a run of that schedule is dropped, not taken', async () => {
    const schedule = await store.create('acme', { when: { every: '1h' }, action, missed_runs: 'run_once' });
    const victim = await store.create('acme', { when: { every: '1h' }, action, missed_runs: 'run_once' });
    const other = await store.create('globex', { when: { every: '1h' }, action, missed_runs: 'run_once' });
    // globex's run body published on an acme schedule's subject, and a body that is not a run at all
    await store.js.publish(
      runSubject('acme', victim.id),
      JSON.stringify({ v: 1, tenant: 'globex', schedule: other.id, generation: 0, kind: 'manual' }),
    );
    await store.js.publish(runSubject('globex', other.id), 'not a run');
    await store.runNow(schedule);
    const seen: DeliveredRun[] = [];
    const malformed: string[] = [];
    const consumer = await RunConsumer.start(nc, store.jsm, async (run) => void seen.push(run), {
      onMalformed: (subject) => malformed.push(subject),
    });
    await sleep(1_000);
    await consumer.stop();
    expect(malformed).toEqual([runSubject('acme', victim.id), runSubject('globex', other.id)]);
    expect(seen.map((run) => [run.message.tenant, run.message.schedule, run.message.kind])).toEqual([
      ['acme', schedule.id, 'manual'],
    ]);
    for (const [tenant, id] of [
      ['acme', schedule.id],
      ['acme', victim.id],
      ['globex', other.id],
    ] as const)
      await store.remove(tenant, id);
  });

  it('a caught-up run made by several gateways is stored once', async () => {
    const schedule = await store.create('acme', { when: { every: '1h' }, action, missed_runs: 'run_once' });
    const before = (await store.jsm.streams.info(SCHEDULES.stream)).state.last_seq;
    await Promise.all([
      store.catchUp(schedule, '2026-12-06T03:00:00.000Z'),
      store.catchUp(schedule, '2026-12-06T03:00:00.000Z'),
    ]);
    expect((await store.jsm.streams.info(SCHEDULES.stream)).state.last_seq).toBe(before + 1);
    await store.remove('acme', schedule.id);
  });

  it("a definition nats-server refuses leaves no record; a tenant's listing holds its own schedules only", async () => {
    await expect(
      store.create('acme', { when: { cron: '0 0 25 * * *' }, action, missed_runs: 'run_once' }),
    ).rejects.toBeInstanceOf(SchedulesError);
    expect(await store.list('acme')).toEqual([]);
    const other = await store.create('globex', { when: { every: '1h' }, action, missed_runs: 'run_once' });
    expect(await store.list('acme')).toEqual([]);
    expect((await store.list('globex')).map((schedule) => schedule.id)).toEqual([other.id]);
    await store.remove('globex', other.id);
  });
});
