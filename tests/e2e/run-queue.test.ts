import type { CommandResult, Conversation } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem } from '../support/system.js';

/** When the conversation's runs started and ended, from its log: [running since, left running at]. */
function runIntervals(events: readonly Event[]): [number, number][] {
  const intervals: [number, number][] = [];
  let since: number | undefined;
  for (const event of events) {
    if (event.type !== 'state_change' || event.status === undefined) continue;
    const at = Date.parse(event.timestamp);
    if (event.status === 'running') since ??= at;
    else if (since !== undefined) {
      intervals.push([since, at]);
      since = undefined;
    }
  }
  return intervals;
}

describe('runs past the tenant limit wait in a queue', () => {
  it('queues them in order (visible on the conversation), starts each as a slot frees, across a gateway restart; another tenant is not held; pause takes a run out', async () => {
    await using system = await startTestSystem({ gateway: true, gatewayEnv: { FLOTILLA_MAX_RUNNING_PER_TENANT: '1' } });
    const task = (id: string) => taskMessage({ id, steps: 4, effects: system.effects, latencyMs: 400 });
    const create = async (id: string, key?: string): Promise<Conversation> => {
      const response = await system.api('POST', '/conversations', { id, message: task(id), run: true }, key);
      expect(response.status, response.text).toBe(201);
      return response.body as Conversation;
    };

    const first = await create('q-1');
    expect(first.status).toBe('running');
    expect(first.queue).toBeNull();
    const second = await create('q-2');
    const third = await create('q-3');
    expect([second.status, second.queue?.position]).toEqual(['idle', 1]);
    expect([third.status, third.queue?.position]).toEqual(['idle', 2]);
    // the list shows the same
    const listed = (await system.api('GET', '/conversations?limit=10')).body as { items: Conversation[] };
    expect(listed.items.find((item) => item.id === 'q-3')?.queue?.position).toBe(2);

    // a run asked of an existing conversation queues behind them: its message is appended now, the run waits
    expect((await system.api('POST', '/conversations', { id: 'q-4' })).status).toBe(201);
    const asked = await system.api('POST', '/conversations/q-4/messages', { text: task('q-4'), run: true });
    expect(asked.status, asked.text).toBe(202);
    expect((asked.body as CommandResult).appended).toBe(true);
    expect((asked.body as CommandResult).queue?.position).toBe(3);
    // paused while queued: it leaves the queue and never runs
    expect((await system.api('POST', '/conversations/q-4/pause', {})).status).toBe(202);
    expect(((await system.api('GET', '/conversations/q-4')).body as Conversation).queue).toBeNull();

    // another tenant's run is not held behind this tenant's queue
    const other = await create('other-1', system.otherApiKey);
    expect([other.status, other.queue]).toEqual(['running', null]);

    // the queue is on the bus: a gateway killed and restarted finds it, and goes on starting runs
    const gateway = system.processes.find((child) => child.name === 'gateway-1')!;
    await gateway.kill('SIGKILL');
    await expect
      .poll(async () => (await system.api('GET', '/conversations/q-3').catch(() => ({ status: 0 }))).status, {
        timeout: 30_000,
      })
      .toBe(200);
    const afterRestart = (await system.api('GET', '/conversations/q-3')).body as Conversation;
    expect(afterRestart.status === 'running' || afterRestart.queue !== null).toBe(true);

    const refs = ['q-1', 'q-2', 'q-3'].map((conversation) => ({ tenant: 'acme', conversation }));
    await system.waitForStatus(refs, ['finished'], 90_000);
    // one at a time, in the order they were queued
    const runs = await Promise.all(refs.map(async (ref) => runIntervals(await system.events(ref))));
    expect(runs.map((intervals) => intervals.length)).toEqual([1, 1, 1]);
    const [one, two, three] = runs.map((intervals) => intervals[0]);
    expect(two![0]).toBeGreaterThanOrEqual(one![1]);
    expect(three![0]).toBeGreaterThanOrEqual(two![1]);
    for (const id of ['q-1', 'q-2', 'q-3'])
      expect(((await system.api('GET', `/conversations/${id}`)).body as Conversation).queue).toBeNull();
    // the paused one never ran
    expect(runIntervals(await system.events({ tenant: 'acme', conversation: 'q-4' }))).toEqual([]);
  }, 180_000);
});
