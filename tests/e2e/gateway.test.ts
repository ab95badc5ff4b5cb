import { FlotillaApiError, FlotillaClient } from '@flotilla/client';
import { NodeWebSocket } from '@flotilla/client/node';
import type { Event } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function expectApiError(promise: Promise<unknown>, status: number, code: string): Promise<FlotillaApiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(FlotillaApiError);
  expect(error).toMatchObject({ status, code });
  return error as FlotillaApiError;
}

/** The whole REST surface through the client library, against a running system (every service its own process). */
describe('the gateway against a running system', () => {
  let system: RunningTestSystem;
  let client: FlotillaClient;
  const waitFor = async (id: string, statuses: string[], timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const conversation = await client.getConversation(id);
      if (statuses.includes(conversation.status)) return conversation;
      if (Date.now() > deadline) throw new Error(`${id} stayed ${conversation.status}`);
      await delay(100);
    }
  };
  const task = (id: string, extra: Record<string, unknown> = {}) =>
    taskMessage({ id, steps: 1, effects: system.effects, ...extra });

  beforeAll(async () => {
    // every action needs confirmation, so the approve/reject paths are exercised
    system = await startTestSystem({
      gateways: 2,
      agent: { confirmation: { mode: 'always' } },
      gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
    });
    client = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey, WebSocket: NodeWebSocket });
  }, 120_000);
  afterAll(async () => {
    await system?.[Symbol.asyncDispose]();
  });

  it('serves server info, health and readiness', async () => {
    const info = await client.serverInfo();
    expect(info).toMatchObject({
      name: 'flotilla-gateway',
      api_version: 'v1',
      tenant: 'acme',
      capabilities: { websocket: true },
    });
    expect(info.tools.map((tool) => tool.name)).toContain('terminal');
    expect((await fetch(`${system.gatewayUrl}/health`)).status).toBe(200);
    expect((await fetch(`${system.gatewayUrl}/ready`)).status).toBe(200);
    const metrics = await (await fetch(`${system.gatewayUrl}/metrics`)).text();
    expect(metrics).toContain('flotilla_http_requests_total');
  });

  it('creates idempotently, streams the run live, approves an action, and reads the final response', async () => {
    const first = await client.createConversation({
      id: 'main',
      title: 'Main',
      tags: ['e2e'],
      message: task('main'),
      run: true,
    });
    expect(first.created).toBe(true);
    expect(first.conversation).toMatchObject({ id: 'main', title: 'Main', tags: ['e2e'] });
    const again = await client.createConversation({ id: 'main', title: 'Other' });
    expect(again.created).toBe(false);
    expect(again.conversation.title).toBe('Main');

    const events: Event[] = [];
    let deltas = 0;
    const subscription = client.subscribe('main', {
      onEvent: (event) => events.push(event),
      onDelta: () => (deltas += 1),
    });
    await subscription.ready();
    await waitFor('main', ['waiting_for_confirmation']);
    const approved = await client.approve('main');
    expect(approved).toMatchObject({ appended: true, status: 'running' });
    const finished = await waitFor('main', ['finished']);
    await delay(200);
    subscription.close();
    expect(events.map((event) => event.seq)).toEqual(
      Array.from({ length: finished.last_seq }, (_, index) => index + 1),
    );
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['action', 'approval', 'execution_started', 'observation']),
    );
    expect(deltas).toBeGreaterThan(0);
    const final = await client.finalResponse('main');
    expect(final).toMatchObject({ status: 'finished', text: 'Done: 1 steps for main.' });
    await expectApiError(client.approve('main'), 409, 'not_waiting');
  }, 90_000);

  it('rejects a pending action with a reason the model reads', async () => {
    await client.createConversation({ id: 'rejected', message: task('rejected'), run: true });
    await waitFor('rejected', ['waiting_for_confirmation']);
    await client.reject('rejected', 'not that command');
    await waitFor('rejected', ['idle']);
    const rejections = await client.searchEvents('rejected', { type: 'user_rejection' });
    expect(rejections.items).toHaveLength(1);
    expect(rejections.items[0]).toMatchObject({ type: 'user_rejection', reason: 'not that command' });
  });

  it('refuses a second run (409) and deletion while running, interrupts a slow LLM call, takes a condensation request, deletes', async () => {
    await client.createConversation({ id: 'slow', message: task('slow', { latencyMs: 4_000 }), run: true });
    await delay(500);
    await expectApiError(client.run('slow'), 409, 'already_running');
    await expectApiError(client.deleteConversation('slow'), 409, 'conversation_running');
    const interrupted = await client.interrupt('slow', 'changed my mind');
    expect(interrupted).toMatchObject({ appended: true, status: 'paused' });
    expect(await client.pause('slow')).toMatchObject({ appended: false, status: 'paused' });
    expect((await client.condense('slow')).appended).toBe(true);
    await client.deleteConversation('slow');
    await expectApiError(client.getConversation('slow'), 404, 'conversation_not_found');
    await expectApiError(client.searchEvents('slow'), 404, 'conversation_not_found');
  });

  it('sends messages, updates metadata, lists with paging, sort and filters, counts and batch-gets', async () => {
    for (const id of ['list-a', 'list-b', 'list-c']) await client.createConversation({ id, title: id });
    const sent = await client.sendMessage('list-b', 'a note, no run');
    expect(sent).toMatchObject({ appended: true, status: 'idle' });
    const updated = await client.updateConversation('list-a', { title: 'renamed', tags: ['x', 'y'] });
    expect(updated).toMatchObject({ title: 'renamed', tags: ['x', 'y'] });
    await delay(300); // lists come from the gateway's index of snapshots
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listConversations({ limit: 2, sort: 'created_at', ...(cursor ? { cursor } : {}) });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((item) => item.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(expect.arrayContaining(['main', 'rejected', 'list-a', 'list-b', 'list-c']));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.indexOf('list-a')).toBeLessThan(seen.indexOf('list-c'));
    const finished = await client.listConversations({ status: 'finished' });
    expect(finished.items.map((item) => item.id)).toEqual(['main']);
    expect(await client.countConversations({ status: 'finished' })).toBe(1);
    expect(await client.countConversations()).toBe(seen.length);
    const batch = await client.batchGetConversations(['list-c', 'nope', 'main']);
    expect(batch.items.map((item) => item?.id ?? null)).toEqual(['list-c', null, 'main']);
  });

  it('searches events with filters and cursors both ways, counts them, and gets one by seq or id', async () => {
    const total = (await client.getConversation('main')).last_seq;
    const forward: number[] = [];
    let page = await client.searchEvents('main', { limit: 4 });
    forward.push(...page.items.map((event) => event.seq));
    while (page.next_cursor) {
      page = await client.searchEvents('main', { cursor: page.next_cursor, limit: 4 });
      forward.push(...page.items.map((event) => event.seq));
    }
    expect(forward).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    const backward: number[] = [];
    page = await client.searchEvents('main', { order: 'desc', limit: 3 });
    backward.push(...page.items.map((event) => event.seq));
    while (page.next_cursor) {
      page = await client.searchEvents('main', { cursor: page.next_cursor, limit: 3 });
      backward.push(...page.items.map((event) => event.seq));
    }
    expect(backward).toEqual([...forward].reverse());
    const actions = await client.searchEvents('main', { type: 'action,observation' });
    expect(actions.items.map((event) => event.type)).toEqual(['action', 'observation']);
    expect(await client.countEvents('main', { type: 'action' })).toBe(1);
    expect(await client.countEvents('main')).toBe(total);
    const byText = await client.searchEvents('main', { text: 'DONE: 1 STEPS' });
    expect(byText.items.map((event) => event.type)).toContain('message');
    const fromUser = await client.searchEvents('main', { source: 'user' });
    expect(fromUser.items.every((event) => event.source === 'user')).toBe(true);
    const third = await client.getEvent('main', 3);
    expect(third.seq).toBe(3);
    expect(await client.getEvent('main', third.id)).toEqual(third);
    await expectApiError(client.getEvent('main', total + 5), 404, 'event_not_found');
    // the page before a cursor's position, the other way
    const middle = await client.searchEvents('main', { after_seq: 5, limit: 2 });
    expect(middle.items.map((event) => event.seq)).toEqual([6, 7]);
    const before = await client.searchEvents('main', { cursor: middle.prev_cursor!, limit: 10 });
    expect(before.items.map((event) => event.seq)).toEqual([5, 4, 3, 2, 1]);
  });

  it('any gateway serves any conversation: created on one, followed and driven on the other, resumed on the first', async () => {
    const [first, second] = system.gatewayUrls;
    const other = new FlotillaClient({ baseUrl: second!, apiKey: system.apiKey, WebSocket: NodeWebSocket });
    const one = new FlotillaClient({ baseUrl: first!, apiKey: system.apiKey, WebSocket: NodeWebSocket });
    await one.createConversation({ id: 'two-gateways', message: task('two-gateways'), run: true });
    const onOther: number[] = [];
    const otherSubscription = other.subscribe('two-gateways', { onEvent: (event) => onOther.push(event.seq) });
    await otherSubscription.ready();
    const waiting = await waitFor('two-gateways', ['waiting_for_confirmation']);
    expect((await other.getConversation('two-gateways')).status).toBe('waiting_for_confirmation');
    const resumed: number[] = [];
    const firstSubscription = one.subscribe('two-gateways', {
      afterSeq: 2,
      onEvent: (event) => resumed.push(event.seq),
    });
    await firstSubscription.ready();
    await other.approve('two-gateways');
    const finished = await waitFor('two-gateways', ['finished']);
    const deadline = Date.now() + 10_000;
    while ((onOther.length < finished.last_seq || resumed.length < finished.last_seq - 2) && Date.now() < deadline)
      await delay(50);
    otherSubscription.close();
    firstSubscription.close();
    expect(waiting.last_seq).toBeGreaterThan(2);
    expect(onOther).toEqual(Array.from({ length: finished.last_seq }, (_, index) => index + 1));
    expect(resumed).toEqual(Array.from({ length: finished.last_seq - 2 }, (_, index) => index + 3));
  }, 90_000);
});
