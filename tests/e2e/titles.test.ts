import type { Event } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { CONDENSER_QUEUE } from '@flotilla/runtime';
import { describe, expect, it } from 'vitest';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

/**
 * Issue 18 item 7: a conversation created without a title gets one from the model, written by the
 * condenser from the first user message beside the run; a title a client or user gave is kept;
 * a title model that keeps failing leaves one visible `title_failed` and is not asked again.
 */
const REST = ['finished', 'error', 'stuck'] as const;
const TITLE_LATENCY_MS = 3_000;

type Conversation = { readonly title: string | null; readonly status: string };

async function create(
  system: RunningTestSystem,
  id: string,
  task: Omit<BrainTask, 'id' | 'effects'>,
  title?: string,
): Promise<ConversationRef> {
  const created = await system.api('POST', '/conversations', {
    id,
    message: taskMessage({ id, effects: system.effects, ...task }),
    run: true,
    ...(title === undefined ? {} : { title }),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { tenant: 'acme', conversation: id };
}

const conversation = async (system: RunningTestSystem, ref: ConversationRef): Promise<Conversation> =>
  (await system.api('GET', `/conversations/${ref.conversation}`)).body as Conversation;
const titleCalls = (system: RunningTestSystem): string[] =>
  system.brain.calls.flatMap((call) => (call.task.startsWith('title:') ? [call.task] : []));
const titleChanges = (events: readonly Event[]): Extract<Event, { type: 'state_change' }>[] =>
  events.filter(
    (event): event is Extract<Event, { type: 'state_change' }> =>
      event.type === 'state_change' && event.title !== undefined,
  );
const titleErrors = (events: readonly Event[]): Event[] =>
  events.filter((event) => event.type === 'conversation_error' && event.code === 'title_failed');

describe('titles generated from the first message (through the services)', () => {
  it('titles a conversation created without one, after its first step and in one commit; a title given at creation or set meanwhile is kept and never asked for', async () => {
    await using system = await startTestSystem({
      condensers: 1,
      gateway: true,
      titleLatencyMs: TITLE_LATENCY_MS,
      recordModelRequests: true,
    });
    // a client's title: kept, and the model is never asked for one
    const given = await create(system, 'title-given', { steps: 1 }, 'My own title');
    await system.waitForStatus([given], REST, 60_000);
    // a user's title set while the (slow) title call may be in flight: theirs wins
    const patched = await create(system, 'title-patched', { steps: 1 });
    expect(
      (await system.api('PATCH', `/conversations/${patched.conversation}`, { title: 'Set by the user' })).status,
    ).toBe(200);
    // no title: one is generated, slowly, and the run does not wait for it
    const untitled = await create(system, 'title-owed', { steps: 2 });
    await expect
      .poll(async () => (await conversation(system, untitled)).title, { timeout: 60_000, interval: 200 })
      .toBe('Work on title-owed');
    await system.waitForStatus([untitled, patched], REST, 60_000);

    const events = await system.events(untitled);
    const [title, ...more] = titleChanges(events);
    expect(more).toEqual([]);
    expect(title).toMatchObject({
      source: 'system',
      title: 'Work on title-owed',
      reason: 'generated from the first message',
    });
    expect(title).not.toHaveProperty('status');
    // the first step was not delayed: its action was logged before the title came
    const firstAction = events.find((event) => event.type === 'action')!;
    expect(firstAction.seq).toBeLessThan(title!.seq);
    // one commit: the call's usage (purpose other) and the title
    const commits = [];
    for await (const commit of system.log.read(untitled)) commits.push(commit);
    const titled = commits.find((commit) => commit.events.some((event) => event.id === title!.id))!;
    expect(titled.events.map((event) => [event.type, event.type === 'llm_usage' ? event.purpose : ''])).toEqual([
      ['llm_usage', 'other'],
      ['state_change', ''],
    ]);
    expect(await system.status(untitled)).toBe('finished');

    // the client's title: kept, no title request for it
    expect((await conversation(system, given)).title).toBe('My own title');
    expect(titleChanges(await system.events(given)).map((event) => event.title)).toEqual(['My own title']);
    expect(
      system.brain.requests.some((body) => body.includes('You name conversations') && body.includes('title-given')),
    ).toBe(false);
    // the user's title: kept, whether the condenser saw it before it asked the model or after
    const patchedAsked = system.brain.requests.some(
      (body) => body.includes('You name conversations') && body.includes('title-patched'),
    );
    if (patchedAsked) {
      await expect
        .poll(async () => (await condenserOutcomes(system)).get('title_not_owed') ?? 0, {
          timeout: 30_000,
          interval: 200,
        })
        .toBeGreaterThanOrEqual(1);
    }
    expect((await conversation(system, patched)).title).toBe('Set by the user');
    expect(titleChanges(await system.events(patched)).map((event) => event.title)).toEqual(['Set by the user']);
    expect(titleCalls(system).length).toBe(patchedAsked ? 2 : 1);
    for (const ref of [untitled, given, patched]) await expectAudited(system.log, ref);
  }, 150_000);

  it("lands the title of a run that does not rest while it runs, beside a step (no step's model call is discarded for it)", async () => {
    await using system = await startTestSystem({ condensers: 1, gateway: true });
    const ref = await create(system, 'title-running', { steps: 12, latencyMs: 300, tool: 'think' });
    await system.waitForStatus([ref], REST, 60_000);
    const events = await system.events(ref);
    const [title] = titleChanges(events);
    expect(title).toMatchObject({ title: 'Work on title-running', reason: 'generated from the first message' });
    // in the run, not at its end: actions came after it
    const actions = events.filter((event) => event.type === 'action');
    expect(actions).toHaveLength(12);
    expect(actions.at(-1)!.seq).toBeGreaterThan(title!.seq);
    // a title lands only where no step is due: every step's model call made it into the log
    expect(system.brain.calls.filter((call) => call.task === 'title-running')).toHaveLength(13);
    await expectAudited(system.log, ref);
  }, 90_000);

  it('a title model that fails on every attempt leaves one visible title_failed, the status untouched, and is not asked again', async () => {
    // the test system's model client tries 4 times
    await using system = await startTestSystem({
      condensers: 1,
      gateway: true,
      titles: ['error', 'error', 'error', 'error'],
    });
    const ref = await create(system, 'title-fails', { steps: 1 });
    await expect
      .poll(async () => titleErrors(await system.events(ref)).length, { timeout: 60_000, interval: 200 })
      .toBe(1);
    await system.waitForStatus([ref], REST, 60_000);
    expect(await system.status(ref)).toBe('finished');
    const [failure] = titleErrors(await system.events(ref));
    expect(failure).toMatchObject({
      source: 'system',
      detail: expect.stringMatching(
        /^The title could not be generated \(transient: .*\); the conversation stays untitled until one is set\.$/,
      ),
    });
    expect(titleCalls(system)).toEqual(['title:error', 'title:error', 'title:error', 'title:error']);
    // a second message and its run: the title is settled (failed), no new attempt
    expect(
      (await system.api('POST', `/conversations/${ref.conversation}/messages`, { text: 'And once more.', run: true }))
        .status,
    ).toBeLessThan(300);
    await expect
      .poll(
        async () =>
          (await system.events(ref)).filter((event) => event.type === 'message' && event.source === 'agent').length,
        { timeout: 60_000, interval: 200 },
      )
      .toBe(2);
    await system.waitForStatus([ref], REST, 60_000);
    const events = await system.events(ref);
    expect(titleErrors(events)).toHaveLength(1);
    expect(titleChanges(events)).toEqual([]);
    expect(titleCalls(system)).toHaveLength(4);
    expect((await conversation(system, ref)).title).toBeNull();
    await expectAudited(system.log, ref);
  }, 120_000);

  it('generates no title when the agent settings turn titles off', async () => {
    await using system = await startTestSystem({
      condensers: 1,
      gateway: true,
      agent: { titles: { generate: false } },
    });
    const off = await create(system, 'titles-off', { steps: 1 });
    await system.waitForStatus([off], REST, 60_000);
    // the step workers decided no title was owed: the condenser was never woken for it
    const stored = await system.log.jsm.streams.info(CONDENSER_QUEUE.stream);
    expect(stored.state.messages).toBe(0);
    expect([...(await condenserOutcomes(system)).values()].reduce((sum, count) => sum + count, 0)).toBe(0);
    expect(titleCalls(system)).toEqual([]);
    expect(titleChanges(await system.events(off))).toEqual([]);
    expect((await conversation(system, off)).title).toBeNull();
    await expectAudited(system.log, off);
  }, 90_000);
});

async function condenserOutcomes(system: RunningTestSystem): Promise<Map<string, number>> {
  const text = await (await fetch(`${system.healthUrls.get('condenser-1')}/metrics`)).text();
  const outcomes = new Map<string, number>();
  for (const match of text.matchAll(/^flotilla_commits_handled_total\{[^}]*\boutcome="([^"]+)"[^}]*\} (\d+)/gm))
    outcomes.set(match[1]!, Number(match[2]));
  return outcomes;
}
