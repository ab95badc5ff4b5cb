import { MAX_SCHEDULES_PER_TENANT, type Schedule } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { AgentCatalog } from '@flotilla/agent';
import { SCHEDULES } from '@flotilla/bus';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationService } from './conversation-service.js';
import { ScheduleService } from './schedule-service.js';
import {
  ACME_KEY,
  GLOBEX_KEY,
  HARNESS_AGENT,
  startGatewayHarness,
  type GatewayHarness,
} from './test-support/gateway-harness.js';
import { expectError, expectIssue, send, sendJson } from './test-support/http-probe.js';

let h: GatewayHarness;

beforeAll(async () => {
  // runs every second are allowed here (the default shortest interval is a minute)
  h = await startGatewayHarness({
    rateLimitPerSecond: 0,
    scheduleMinIntervalSeconds: 1,
    scheduleMissedRunGraceMs: 2_000,
  });
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

const create = (body: unknown, key = ACME_KEY) => sendJson(h, 'POST', '/v1/schedules', body, key);
const get = (url: string, key = ACME_KEY) => send(h, { method: 'GET', url, key });
const post = (url: string, key = ACME_KEY) => send(h, { method: 'POST', url, key });
const schedule = async (id: string): Promise<Schedule> => (await get(`/v1/schedules/${id}`)).json as Schedule;

/** Polls until `check` holds, saying what it waited for when it gives up. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(value).slice(0, 600)}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

const conversationEvents = async (conversation: string): Promise<Event[]> =>
  (await h.acme.searchEvents(conversation, { limit: 200 })).items;
const userTexts = (events: readonly Event[]): string[] =>
  events.flatMap((event) =>
    event.type === 'message' && event.source === 'user'
      ? event.content.flatMap((part) => (part.type === 'text' ? [part.text] : []))
      : [],
  );

describe('schedules over REST', () => {
  it('a cron in a time zone creates a conversation with its message and runs it at each run; pause stops the runs, resume restarts them, delete ends them', async () => {
    const reply = await create({
      when: { cron: '* * * * * *', time_zone: 'Asia/Kolkata' },
      action: { type: 'create_conversation', message: 'write the nightly report', title: 'nightly', tags: ['report'] },
      description: 'every second',
    });
    expect(reply.status, reply.text).toBe(201);
    const created = reply.json as Schedule;
    expect(created).toMatchObject({
      id: expect.stringMatching(/^sch_[0-9a-f]{32}$/),
      status: 'active',
      missed_runs: 'run_once',
      runs: 0,
      last_run: null,
      description: 'every second',
    });
    const ran = await until(
      'a first run',
      () => schedule(created.id),
      (current) => current.runs >= 1 && current.last_run !== null,
    );
    expect(ran.last_run).toMatchObject({
      outcome: 'succeeded',
      error: null,
      conversation: expect.stringContaining(created.id),
    });
    // the next run as nats-server announced it, in UTC
    expect(Date.parse(ran.next_run_at!)).toBeGreaterThan(Date.parse(ran.last_run!.due_at));
    const conversation = ran.last_run!.conversation!;
    const resource = await h.acme.getConversation(conversation);
    expect(resource).toMatchObject({ title: 'nightly', tags: ['report'], status: 'running' });
    expect(userTexts(await conversationEvents(conversation))).toEqual(['write the nightly report']);

    const paused = (await post(`/v1/schedules/${created.id}/pause`)).json as Schedule;
    expect(paused).toMatchObject({ status: 'paused', next_run_at: null });
    // a run a gateway had already begun taking finishes; none begins after
    await new Promise((resolve) => setTimeout(resolve, 500));
    const runsAtPause = (await schedule(created.id)).runs;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await schedule(created.id)).runs).toBe(runsAtPause);
    expect((await get('/v1/schedules')).json).toMatchObject({ schedules: [{ id: created.id, status: 'paused' }] });

    expect(((await post(`/v1/schedules/${created.id}/resume`)).json as Schedule).status).toBe('active');
    const resumed = await until(
      'a run after the resume',
      () => schedule(created.id),
      (current) => current.runs > runsAtPause,
    );
    // each run its own conversation
    expect(resumed.last_run!.conversation).not.toBe(conversation);

    expect((await send(h, { method: 'DELETE', url: `/v1/schedules/${created.id}`, key: ACME_KEY })).status).toBe(204);
    expectError(await get(`/v1/schedules/${created.id}`), 404, 'schedule_not_found');
    const after = (await h.acme.listConversations({ limit: 200 })).items.filter((item) =>
      item.id.startsWith(created.id),
    ).length;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(
      (await h.acme.listConversations({ limit: 200 })).items.filter((item) => item.id.startsWith(created.id)).length,
    ).toBe(after);
  });

  it('a message to an existing conversation is sent and run; a run whose conversation is gone records the error and is not retried', async () => {
    const target = (await h.acme.createConversation({ title: 'target' })).conversation.id;
    const created = (
      await create({
        when: { every: '1h' },
        action: { type: 'send_message', conversation: target, text: 'status update please' },
      })
    ).json as Schedule;
    expect((await post(`/v1/schedules/${created.id}/run`)).status).toBe(202);
    const ran = await until(
      'the run asked for',
      () => schedule(created.id),
      (current) => current.runs === 1,
    );
    expect(ran.last_run).toMatchObject({ outcome: 'succeeded', conversation: target, error: null });
    expect(userTexts(await conversationEvents(target))).toEqual(['status update please']);
    expect((await h.acme.getConversation(target)).status).toBe('running');

    await h.acme.pause(target);
    await h.acme.deleteConversation(target);
    await post(`/v1/schedules/${created.id}/run`);
    const failed = await until(
      'the failed run',
      () => schedule(created.id),
      (current) => current.runs === 2,
    );
    expect(failed.last_run).toMatchObject({
      outcome: 'failed',
      conversation: target,
      error: { code: 'conversation_not_found' },
    });
    expect(failed.status).toBe('active');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await schedule(created.id)).runs).toBe(2);
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    for (const outcome of ['succeeded', 'failed'])
      expect(metrics).toMatch(new RegExp(`^flotilla_schedule_runs_total\\{outcome="${outcome}"[^}]*\\} [1-9]`, 'm'));
    await send(h, { method: 'DELETE', url: `/v1/schedules/${created.id}`, key: ACME_KEY });
  });

  it('a run delivered again after its gateway died mid-way: a claimed message is not sent twice, a conversation is not created twice', async () => {
    const nextSeq = async (): Promise<number> =>
      (await h.schedules.jsm.streams.info(SCHEDULES.stream)).state.last_seq + 1;
    // a message's run claimed by a gateway that then died: taken again, it is recorded as interrupted and not sent
    const target = (await h.acme.createConversation({ title: 'at most once' })).conversation.id;
    const sending = (
      await create({ when: { every: '1h' }, action: { type: 'send_message', conversation: target, text: 'only once' } })
    ).json as Schedule;
    const claimedSeq = await nextSeq();
    await h.schedules.update('acme', sending.id, (current) => ({ ...current, claimed_seq: claimedSeq }));
    await post(`/v1/schedules/${sending.id}/run`);
    const interrupted = await until(
      'the interrupted run',
      () => schedule(sending.id),
      (current) => current.runs === 1,
    );
    expect(interrupted.last_run).toMatchObject({ outcome: 'failed', error: { code: 'interrupted' } });
    expect(userTexts(await conversationEvents(target))).toEqual([]);

    // a conversation's run that created it before its gateway died: taken again, it finds that conversation
    const creating = (
      await create({ when: { every: '1h' }, action: { type: 'create_conversation', message: 'made once' } })
    ).json as Schedule;
    const seq = await nextSeq();
    await h.schedules.update('acme', creating.id, (current) => ({ ...current, claimed_seq: seq }));
    await h.acme.createConversation({ id: `${creating.id}-${seq}`, message: 'made once', run: true });
    await post(`/v1/schedules/${creating.id}/run`);
    const redone = await until(
      'the run taken again',
      () => schedule(creating.id),
      (current) => current.runs === 1,
    );
    expect(redone.last_run).toMatchObject({ outcome: 'succeeded', conversation: `${creating.id}-${seq}` });
    expect(userTexts(await conversationEvents(`${creating.id}-${seq}`))).toEqual(['made once']);
    for (const id of [sending.id, creating.id])
      await send(h, { method: 'DELETE', url: `/v1/schedules/${id}`, key: ACME_KEY });
  });

  it("another tenant neither sees nor touches a tenant's schedules", async () => {
    const created = (await create({ when: { every: '1h' }, action: { type: 'create_conversation', message: 'hello' } }))
      .json as Schedule;
    // an interval's first run is known before the server announces it
    expect(Date.parse(created.next_run_at!) - Date.parse(created.created_at)).toBe(3_600_000);
    expect((await get('/v1/schedules', GLOBEX_KEY)).json).toEqual({ schedules: [] });
    expectError(await get(`/v1/schedules/${created.id}`, GLOBEX_KEY), 404, 'schedule_not_found');
    for (const action of ['pause', 'resume', 'run'])
      expectError(await post(`/v1/schedules/${created.id}/${action}`, GLOBEX_KEY), 404, 'schedule_not_found');
    expectError(
      await send(h, { method: 'DELETE', url: `/v1/schedules/${created.id}`, key: GLOBEX_KEY }),
      404,
      'schedule_not_found',
    );
    expect((await schedule(created.id)).status).toBe('active');
    // nor messages a conversation of the tenant's
    const target = (await h.acme.createConversation({ title: 'mine' })).conversation.id;
    expectError(
      await create(
        { when: { every: '1h' }, action: { type: 'send_message', conversation: target, text: 'hi' } },
        GLOBEX_KEY,
      ),
      404,
      'conversation_not_found',
    );
    await send(h, { method: 'DELETE', url: `/v1/schedules/${created.id}`, key: ACME_KEY });
  });

  it("the client's schedule methods, over HTTP", async () => {
    const created = await h.acme.createSchedule({
      when: { at: new Date(Date.now() + 3_600_000).toISOString() },
      action: { type: 'create_conversation', message: 'later' },
      description: 'from the client',
    });
    expect(created).toMatchObject({ status: 'active', description: 'from the client', missed_runs: 'run_once' });
    expect((await h.acme.listSchedules()).map((schedule) => schedule.id)).toContain(created.id);
    expect((await h.acme.pauseSchedule(created.id)).status).toBe('paused');
    expect((await h.acme.getSchedule(created.id)).status).toBe('paused');
    expect((await h.acme.resumeSchedule(created.id)).status).toBe('active');
    expect((await h.acme.runSchedule(created.id)).id).toBe(created.id);
    const ran = await until(
      'the run asked for',
      () => h.acme.getSchedule(created.id),
      (current) => current.runs === 1,
    );
    expect(ran.last_run).toMatchObject({ outcome: 'succeeded', conversation: expect.stringContaining(created.id) });
    // a run asked for does not complete a one-time schedule: its time is still to come
    expect(ran.status).toBe('active');
    await h.acme.deleteSchedule(created.id);
    await expect(h.acme.getSchedule(created.id)).rejects.toMatchObject({ status: 404, code: 'schedule_not_found' });
    await expect(h.globex.deleteSchedule(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('refuses bad schedules with a 400 naming the field', async () => {
    const before = (await get('/v1/schedules')).json;
    const action = { type: 'create_conversation', message: 'hi' };
    expectIssue(await create({ when: { cron: '*/5 * * * *' }, action }), 'body.when.cron', 'five fields');
    expectIssue(
      await create({ when: { cron: '0 0 9 * * *', time_zone: 'Mars/Olympus' }, action }),
      'body.when.time_zone',
      'unknown zone',
    );
    expectIssue(await create({ when: { cron: '0 0 99 * * *' }, action }), 'body.when', 'an hour the server refuses');
    expectIssue(await create({ when: { every: '5 minutes' }, action }), 'body.when.every', 'bad interval');
    expectIssue(await create({ when: { at: '2020-01-01T00:00:00Z' }, action }), 'body.when.at', 'in the past');
    expectIssue(
      await create({ when: { every: '1h' }, action: { ...action, template: 'nonesuch' } }),
      'body.action.template',
      'unknown template',
    );
    expectIssue(
      await create({ when: { every: '1h' }, action: { type: 'send_message', text: 'hi' } }),
      'body.action.conversation',
      'no conversation',
    );
    expectIssue(
      await create({ when: { every: '1h' }, action, missed_runs: 'sometimes' }),
      'body.missed_runs',
      'unknown policy',
    );
    expectIssue(await get('/v1/schedules/not-an-id'), 'params.id', 'bad id');
    // none of them left a schedule behind (a definition the server refused included)
    expect((await get('/v1/schedules')).json).toEqual(before);
  });

  it("the operator's shortest interval bounds intervals and how often a cron fires", async () => {
    const conversations = undefined as unknown as ConversationService; // not reached: the checks come first
    const service = new ScheduleService(
      h.schedules,
      conversations,
      new AgentCatalog(HARNESS_AGENT),
      { minIntervalSeconds: 60 },
      pino({ level: 'silent' }),
    );
    const action = { type: 'create_conversation' as const, message: 'hi' };
    await expect(service.create('acme', { when: { every: '30s' }, action })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('at least 60 s'),
    });
    await expect(service.create('acme', { when: { cron: '*/10 * * * * *' }, action })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining('seconds field'),
    });
    const daily = await service.create('acme', {
      when: { cron: '0 30 9 * * MON-FRI', time_zone: 'Europe/Paris' },
      action,
    });
    await service.remove('acme', daily.id);
  });

  it(`a tenant has at most ${MAX_SCHEDULES_PER_TENANT} schedules`, async () => {
    const body = { when: { every: '1h' }, action: { type: 'create_conversation', message: 'hi' } };
    for (let index = 0; index < MAX_SCHEDULES_PER_TENANT; index += 1)
      expect((await create(body, GLOBEX_KEY)).status).toBe(201);
    expectError(await create(body, GLOBEX_KEY), 409, 'schedule_limit_reached');
    // the other tenant is not limited by it
    const mine = (await create(body)).json as Schedule;
    await send(h, { method: 'DELETE', url: `/v1/schedules/${mine.id}`, key: ACME_KEY });
  });

  it('a run that came due while nats-server was down (its scheduler skips those) is caught up once for run_once, not for skip', async () => {
    // two runs a minute: the first taken normally (it announces the second), the second due while nats-server is down
    const first = Math.ceil(Date.now() / 1000) + 2;
    const cron = `${[first % 60, (first + 5) % 60].sort((a, b) => a - b).join(',')} * * * * *`;
    const action = { type: 'create_conversation', message: 'caught up?' };
    const once = (await create({ when: { cron }, action, missed_runs: 'run_once' })).json as Schedule;
    const skip = (await create({ when: { cron }, action, missed_runs: 'skip' })).json as Schedule;
    for (const id of [once.id, skip.id])
      await until(
        'the first run',
        () => schedule(id),
        (current) => current.runs === 1,
      );
    const announced = (await schedule(once.id)).next_run_at!;
    expect(Date.parse(announced)).toBe((first + 5) * 1000);
    await h.nats.kill();
    // down past the second run and the grace (2 s here)
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, (first + 5) * 1000 + 3_000 - Date.now())));
    await h.nats.restart();
    const caughtUp = await until(
      'the caught-up run',
      () => schedule(once.id).catch(() => undefined),
      (current) => current?.runs === 2,
      20_000,
    );
    expect(caughtUp!.last_run).toMatchObject({ due_at: announced, outcome: 'succeeded' });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await schedule(skip.id)).runs).toBe(1);
    expect((await schedule(once.id)).runs).toBe(2);
  });
});
