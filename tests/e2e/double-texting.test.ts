import { FlotillaApiError, FlotillaClient } from '@flotilla/client';
import type { Event } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A message sent while a run is busy, by each of its `on_busy` choices, through the REST API against every service. */
describe('messages while a conversation runs (on_busy)', () => {
  let system: RunningTestSystem;
  let client: FlotillaClient;
  const task = (id: string, extra: Partial<BrainTask> = {}) =>
    taskMessage({ id, steps: 1, effects: system.effects, ...extra });
  const events = (id: string): Promise<Event[]> => system.events({ tenant: 'acme', conversation: id });
  const settle = async (id: string): Promise<string> => {
    const ref = { tenant: 'acme', conversation: id };
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    return system.status(ref);
  };
  /** The model requests of conversation `id`, as sent. */
  const requestsOf = (id: string): string[] =>
    system.brain.requests.filter((body) => body.includes(`\\"id\\":\\"${id}\\"`));
  const callInFlight = (id: string): Promise<void> =>
    expect
      .poll(() => system.brain.calls.some((call) => call.task === id && call.closedAt === undefined), {
        timeout: 20_000,
      })
      .toBe(true);

  beforeAll(async () => {
    system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
    });
    client = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey });
  }, 120_000);
  afterAll(async () => {
    await system?.[Symbol.asyncDispose]();
  });

  it('reject: 409 conversation_busy naming where the run began, nothing logged; the spec makes it the default; enqueue logs it for the next step', async () => {
    await client.createConversation({
      id: 'busy-reject',
      spec: { on_busy: 'reject' },
      message: task('busy-reject', { latencyMs: 3_000 }),
      run: true,
    });
    const running = await client.getConversation('busy-reject');
    expect(running.status).toBe('running');
    expect(running.run_started).toMatchObject({ seq: expect.any(Number) });
    const refused = await client.sendMessage('busy-reject', 'are you there?').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FlotillaApiError);
    expect(refused).toMatchObject({ status: 409, code: 'conversation_busy' });
    expect((refused as Error).message).toContain(`the run began at event ${running.run_started!.seq}`);
    // nothing of it logged (the run itself goes on appending meanwhile)
    expect(JSON.stringify(await events('busy-reject'))).not.toContain('are you there?');
    // the message's own choice overrides the spec's
    const queued = await client.sendMessage('busy-reject', 'then look at the tests too', { on_busy: 'enqueue' });
    expect(queued).toMatchObject({ appended: true, status: 'running' });
    expect(await settle('busy-reject')).toBe('finished');
    const log = await events('busy-reject');
    expect(
      log.some(
        (event) =>
          event.type === 'message' &&
          event.role === 'user' &&
          JSON.stringify(event.content).includes('then look at the tests too'),
      ),
    ).toBe(true);
    expect(log.some((event) => event.type === 'interrupt')).toBe(false);
    expect(requestsOf('busy-reject').at(-1)).toContain('then look at the tests too');
    await expectAudited(system.log, { tenant: 'acme', conversation: 'busy-reject' });
  }, 90_000);

  it('interrupt: the model call in flight stops at once, the run goes on from the message', async () => {
    const slowUntil = Date.now() + 2_500;
    await client.createConversation({
      id: 'busy-interrupt',
      message: task('busy-interrupt', { chunks: 40, chunkDelayMs: 200, slowUntil }),
      run: true,
    });
    await callInFlight('busy-interrupt');
    await delay(300);
    const sentAt = Date.now();
    const sent = await client.sendMessage('busy-interrupt', 'stop that: summarise instead', { on_busy: 'interrupt' });
    expect(sent).toMatchObject({ appended: true, status: 'running' });
    await expect
      .poll(() => system.brain.calls.find((call) => call.task === 'busy-interrupt')?.closedAt, { timeout: 5_000 })
      .toBeDefined();
    const first = system.brain.calls.find((call) => call.task === 'busy-interrupt')!;
    expect(first.completed).toBe(false);
    expect(first.closedAt! - sentAt).toBeLessThan(1_000);
    expect(await settle('busy-interrupt')).toBe('finished');
    const log = await events('busy-interrupt');
    const interrupt = log.findIndex((event) => event.type === 'interrupt');
    expect(interrupt).toBeGreaterThan(0);
    expect(log[interrupt + 1]).toMatchObject({ type: 'message', role: 'user' });
    // the run was never paused: the message went on with it
    expect(log.some((event) => event.type === 'state_change' && event.status === 'paused')).toBe(false);
    // nothing of the stopped call landed before the message; the step after it read the message
    expect(
      log
        .slice(0, interrupt)
        .some((event) => event.type === 'action' || (event.type === 'message' && event.role === 'assistant')),
    ).toBe(false);
    expect(requestsOf('busy-interrupt').at(-1)).toContain('stop that: summarise instead');
    await expectAudited(system.log, { tenant: 'acme', conversation: 'busy-interrupt' });
  }, 90_000);

  it('rollback: the command in flight stops, what the run did leaves the model view (the log keeps it), the run goes on from the message', async () => {
    await client.createConversation({
      id: 'busy-rollback',
      message: task('busy-rollback', { steps: 3, sleep: 1.5 }),
      run: true,
    });
    const runStart = (await client.getConversation('busy-rollback')).run_started!.seq;
    // the first command answered, the second one running
    await expect
      .poll(async () => (await events('busy-rollback')).filter((event) => event.type === 'observation').length, {
        timeout: 30_000,
      })
      .toBe(1);
    await expect
      .poll(async () => (await events('busy-rollback')).filter((event) => event.type === 'execution_started').length, {
        timeout: 30_000,
      })
      .toBe(2);
    const firstCall = (await events('busy-rollback')).find((event) => event.type === 'action')!;
    // (the test's model reads PROGRESS=n in a user message as n steps done: this one ends the task)
    const sent = await client.sendMessage('busy-rollback', 'start over with a different approach, PROGRESS=3', {
      on_busy: 'rollback',
    });
    expect(sent).toMatchObject({ appended: true, status: 'running' });
    expect(await settle('busy-rollback')).toBe('finished');

    const log = await events('busy-rollback');
    const branch = log.find((event) => event.type === 'branch');
    expect(branch).toMatchObject({
      kind: 'rewind',
      from: { conversation: 'busy-rollback', seq: runStart },
      reason: 'rolled back by a new user message',
    });
    expect((branch as Extract<Event, { type: 'branch' }>).forgotten_event_ids).toContain(firstCall.id);
    // the command that was running was stopped: its answer says so, and it never reached its side effect
    const answers = log.filter((event) => event.type === 'observation' && event.seq < branch!.seq);
    expect(answers).toHaveLength(1);
    const conversation = await client.getConversation('busy-rollback');
    expect(conversation.branch.abandoned).toEqual([{ first: runStart + 1, last: expect.any(Number) }]);
    // the step after the message saw the run's start and the message, not the abandoned calls
    const after = requestsOf('busy-rollback').filter((body) => body.includes('start over with a different approach'));
    expect(after.length).toBeGreaterThan(0);
    expect(after[0]).not.toContain(`call_busy-rollback_1_`);
    expect(after[0]).toContain('TASK');
    await expectAudited(system.log, { tenant: 'acme', conversation: 'busy-rollback' });
  }, 120_000);

  it('refuses an on_busy that is not one of the four, and one in the spec likewise', async () => {
    await client.createConversation({ id: 'busy-invalid' });
    const response = await fetch(`${system.gatewayUrl}/v1/conversations/busy-invalid/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': system.apiKey },
      body: JSON.stringify({ text: 'hi', on_busy: 'shout' }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: 'validation_failed', issues: [{ path: 'body.on_busy' }] },
    });
    const spec = await client
      .createConversation({ id: 'busy-invalid-spec', spec: { on_busy: 'later' } })
      .catch((error: unknown) => error);
    expect(spec).toMatchObject({ status: 400, code: 'validation_failed' });
  });
});
