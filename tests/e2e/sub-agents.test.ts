import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Event, ObservationEvent } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { taskMessage, type BrainTask } from '../support/brain-server.js';
import { startTestSystem, type RunningTestSystem, type SystemOptions } from '../support/system.js';
import { replayRequests } from '@flotilla/agent';
import { auditFamily, formatReport } from '@flotilla/auditor';
import { effectCounts } from '../support/log-checks.js';

const AT_REST = ['finished', 'error', 'stuck', 'idle'] as const;

/** The operator's sub-agents: two that work in their parent's workspace, one in a workspace of its own. */
const CATALOG = {
  subAgents: [
    '---\nname: researcher\ndescription: Looks things up in the shared workspace.\ntools: [terminal, finish]\n---\nYou research. Report what you found.',
    '---\nname: builder\ndescription: Builds things in a workspace of its own.\ntools: [terminal, finish]\nworkspace: own\n---\nYou build.',
  ],
  templates: { lead: { tools: ['terminal', 'task', 'finish'], subAgents: ['researcher', 'builder'] } },
};

type Child = { readonly agent: string; readonly task: Omit<BrainTask, 'effects'> };

/** A parent whose first step delegates to `children` in parallel (one task call each), then answers. */
async function startParent(
  system: RunningTestSystem,
  id: string,
  children: readonly Child[],
): Promise<ConversationRef> {
  const batch = children.map((child) => ({
    tool: 'task',
    input: {
      agent: child.agent,
      prompt: taskMessage({ ...child.task, effects: system.effects }),
      description: child.task.id,
    },
  }));
  const created = await system.api('POST', '/conversations', {
    id,
    template: 'lead',
    message: taskMessage({ id, steps: 1, batches: [batch], effects: system.effects }),
    run: true,
  });
  expect(created.status, created.text).toBe(201);
  return { tenant: 'acme', conversation: id };
}

/** The children a parent started, in call order. */
function childrenOf(events: readonly Event[], tenant: string): ConversationRef[] {
  return events.flatMap((event) => (event.type === 'subagent_started' ? [{ tenant, conversation: event.child }] : []));
}

/** What the parent's task calls were answered with, and how many commits and steps came after the calls. */
async function parentOutcome(system: RunningTestSystem, ref: ConversationRef) {
  const events = await system.events(ref);
  const calls = events.filter((event) => event.type === 'action' && event.tool_name === 'task');
  const answers = events.filter(
    (event): event is ObservationEvent => event.type === 'observation' && event.tool_name === 'task',
  );
  const commitsOf = new Set(answers.map((answer) => answer.id.slice(0, 13)));
  const lastAnswer = Math.max(...answers.map((answer) => answer.seq));
  const stepsAfter = events.filter(
    (event) => event.type === 'llm_usage' && event.purpose === 'step' && event.seq > lastAnswer,
  ).length;
  const stepsWhileWaiting = events.filter(
    (event) =>
      event.type === 'llm_usage' && event.purpose === 'step' && event.seq > calls.at(-1)!.seq && event.seq < lastAnswer,
  ).length;
  return { events, calls, answers, answerCommits: commitsOf.size, stepsAfter, stepsWhileWaiting };
}

/** The auditor passes the parent and each child, and each child's link to its call holds both ways. */
async function expectFamilyAudited(
  system: RunningTestSystem,
  parent: ConversationRef,
  children: number,
): Promise<void> {
  const family = await auditFamily(system.log, parent);
  expect(family.reports.map((report) => report.conversation.conversation)).toHaveLength(1 + children);
  for (const report of family.reports) expect(report.violations, formatReport(report)).toEqual([]);
  expect(family.links).toEqual([]);
}

async function system(options: SystemOptions = {}): Promise<RunningTestSystem> {
  return startTestSystem({ gateway: true, delegators: 1, catalog: CATALOG, ...options });
}

describe('sub-agents through the services', () => {
  it('delegates to three children in parallel, each on its own step worker; the parent resumes once with three answers', async () => {
    // each step worker takes one commit at a time and holds none beyond it (no lookahead: with one, a
    // busy worker keeps its partitions' commits instead of letting them overflow to an idle sibling,
    // docs/architecture.md "Tenant fairness"): three first calls in flight at once are on three workers
    await using running = await system({
      stepWorkers: 3,
      stepWorkerEnv: { FLOTILLA_CONCURRENCY: '1', FLOTILLA_LOOKAHEAD: '0', FLOTILLA_LOG_LEVEL: 'debug' },
      captureLogs: true,
      recordModelRequests: true,
    });
    const kids: Child[] = [
      { agent: 'researcher', task: { id: 'kid-a', steps: 1, latencyMs: 200, meet: { group: 'kids', count: 3 } } },
      { agent: 'researcher', task: { id: 'kid-b', steps: 1, latencyMs: 200, meet: { group: 'kids', count: 3 } } },
      { agent: 'builder', task: { id: 'kid-c', steps: 1, latencyMs: 200, meet: { group: 'kids', count: 3 } } },
    ];
    const parent = await startParent(running, 'lead-parallel', kids);
    await running.waitForStatus([parent], AT_REST, 90_000);
    expect(await running.status(parent)).toBe('finished');

    const outcome = await parentOutcome(running, parent);
    expect(outcome.calls).toHaveLength(3);
    expect(outcome.answers.map((answer) => [answer.tool_call_id, answer.is_error, answer.content])).toEqual(
      outcome.calls.map((call, index) => [
        call.type === 'action' ? call.tool_call_id : '',
        false,
        [{ type: 'text', text: `Done: 1 steps for kid-${'abc'[index]}.` }],
      ]),
    );
    // all three answers in one commit, no step while the children worked, one step after them
    expect(outcome.answerCommits).toBe(1);
    expect(outcome.stepsWhileWaiting).toBe(0);
    expect(outcome.stepsAfter).toBe(1);

    const children = childrenOf(outcome.events, parent.tenant);
    expect(children).toHaveLength(3);
    for (const child of children) expect(await running.status(child)).toBe('finished');
    // the three first model calls were in flight at once
    const first = ['kid-a', 'kid-b', 'kid-c'].map((id) => running.brain.calls.find((call) => call.task === id)!);
    const lastStart = Math.max(...first.map((call) => call.startedAt));
    for (const call of first) expect(call.closedAt ?? Number.POSITIVE_INFINITY).toBeGreaterThanOrEqual(lastStart);
    // which step worker ran each child's steps, from the step workers' own log lines
    const workers = new Map<string, Set<string>>();
    for (const line of running.logLines) {
      if (!line.includes('"step appended"')) continue;
      const record = JSON.parse(line) as { conversation?: string; instance?: string; service?: string };
      if (record.service !== 'step-worker' || !record.conversation || !record.instance) continue;
      workers.set(record.conversation, (workers.get(record.conversation) ?? new Set()).add(record.instance));
    }
    const firstWorkers = children.map((child) => {
      const lines = running.logLines.filter(
        (line) => line.includes('"step appended"') && line.includes(`"conversation":"${child.conversation}"`),
      );
      return (JSON.parse(lines[0]!) as { instance: string }).instance;
    });
    expect(new Set(firstWorkers).size, `first steps on ${firstWorkers.join(', ')}`).toBe(3);
    for (const child of children) expect(workers.get(child.conversation)?.size ?? 0).toBeGreaterThan(0);

    // the researchers worked in their parent's workspace, the builder in its own
    const workspace = (conversation: string): Promise<string> =>
      readFile(join(running.home, 'workspaces', 'acme', conversation, running.effects), 'utf8').catch(() => '');
    expect((await workspace(parent.conversation)).split('\n').filter(Boolean).sort()).toEqual([
      'kid-a 0 0',
      'kid-b 0 0',
    ]);
    expect((await workspace(children[2]!.conversation)).trim()).toBe('kid-c 0 0');
    await expectFamilyAudited(running, parent, 3);
    // every step of the parent and of a child is rebuilt from its log alone: the task tool as offered, the child's spec
    for (const [ref, id] of [
      [parent, 'lead-parallel'],
      [children[2]!, 'kid-c'],
    ] as const) {
      const received = [
        ...new Set(
          running.brain.requests.filter((body) => body.includes('"tools":[') && body.includes(`\\"id\\":\\"${id}\\"`)),
        ),
      ];
      expect(received.length, id).toBe(2);
      expect(
        replayRequests(await running.events(ref)).map((request) => request.body),
        id,
      ).toEqual(received);
    }
    expect(running.brain.requests.find((body) => body.includes('lead-parallel'))).toContain(
      '- builder: Builds things in a workspace of its own.',
    );

    // deleting the parent deletes its children: their logs, and the workspaces (its own, the builder's)
    const deleted = await running.api('DELETE', `/conversations/${parent.conversation}`);
    expect(deleted.status, deleted.text).toBe(204);
    for (const ref of [parent, ...children]) {
      expect(await running.events(ref)).toEqual([]);
      expect((await running.api('GET', `/conversations/${ref.conversation}`)).status).toBe(404);
    }
    await expect.poll(() => workspace(parent.conversation)).toBe('');
    await expect.poll(() => workspace(children[2]!.conversation)).toBe('');
  }, 180_000);

  it('a SIGKILL of any service while the children work changes nothing in the outcome', async () => {
    await using running = await system({ stepWorkers: 3, toolRunners: 2, condensers: 1 });
    const kids: Child[] = ['kid-x', 'kid-y', 'kid-z'].map((id, index) => ({
      agent: index === 2 ? 'builder' : 'researcher',
      task: { id, steps: 4, sleep: 0.4, latencyMs: 150 },
    }));
    // no delegator when the parent delegates: its calls wait in its log, and the delegator started later starts them
    const delegator = running.processes.find((process) => process.name === 'delegator-1')!;
    await delegator.kill('SIGKILL', { restart: false });
    const parent = await startParent(running, 'lead-chaos', kids);
    await expect
      .poll(async () => (await running.events(parent)).filter((event) => event.type === 'action').length, {
        timeout: 30_000,
      })
      .toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(childrenOf(await running.events(parent), parent.tenant)).toEqual([]);
    delegator.start();
    await expect
      .poll(async () => childrenOf(await running.events(parent), parent.tenant).length, { timeout: 30_000 })
      .toBe(3);
    // one process of each service, one after another, while the children work
    const killed: string[] = [];
    for (const name of [
      'delegator-1',
      'step-worker-1',
      'tool-runner-1',
      'projector-1',
      'step-worker-2',
      'condenser-1',
      'gateway-1',
      'tool-runner-2',
      'delegator-1',
    ]) {
      const victim = running.processes.find((process) => process.name === name)!;
      await new Promise((resolve) => setTimeout(resolve, 700));
      if (!victim.running) continue;
      await victim.kill('SIGKILL');
      killed.push(name);
    }
    expect(killed.length).toBeGreaterThanOrEqual(8);
    await running.waitForStatus([parent], AT_REST, 150_000);
    expect(await running.status(parent)).toBe('finished');
    const outcome = await parentOutcome(running, parent);
    expect(outcome.answers.map((answer) => [answer.is_error, answer.content])).toEqual(
      ['x', 'y', 'z'].map((id) => [false, [{ type: 'text', text: `Done: 4 steps for kid-${id}.` }]]),
    );
    expect([outcome.answerCommits, outcome.stepsWhileWaiting, outcome.stepsAfter]).toEqual([1, 0, 1]);
    // no child twice, no call answered twice, no action's effect twice
    const children = childrenOf(outcome.events, parent.tenant);
    expect(new Set(children.map((child) => child.conversation)).size).toBe(3);
    expect(outcome.events.filter((event) => event.type === 'subagent_started')).toHaveLength(3);
    const duplicated = [...effectCounts(await running.readEffects())].filter(([, count]) => count > 1);
    expect(duplicated).toEqual([]);
    await expectFamilyAudited(running, parent, 3);
  }, 300_000);

  it('interrupting the parent stops its children at once; running it again resumes them, and the parent is answered', async () => {
    await using running = await system({ stepWorkers: 2 });
    const slowUntil = Date.now() + 12_000;
    const kids: Child[] = ['kid-p', 'kid-q'].map((id) => ({
      agent: 'researcher',
      task: { id, steps: 1, chunks: 100, chunkDelayMs: 100, slowUntil },
    }));
    const parent = await startParent(running, 'lead-interrupted', kids);
    await expect
      .poll(
        () =>
          ['kid-p', 'kid-q'].every((id) =>
            running.brain.calls.some((call) => call.task === id && call.closedAt === undefined),
          ),
        { timeout: 30_000 },
      )
      .toBe(true);
    const interruptedAt = Date.now();
    const interrupted = await running.api('POST', `/conversations/${parent.conversation}/interrupt`, {
      reason: 'stop everything',
    });
    expect(interrupted.status, interrupted.text).toBeLessThan(300);
    // each child's in-flight model call is dropped, and each child rests paused by an interrupt of its own
    await expect
      .poll(
        () =>
          ['kid-p', 'kid-q'].every((id) =>
            running.brain.calls.filter((call) => call.task === id).every((call) => call.closedAt !== undefined),
          ),
        { timeout: 5_000 },
      )
      .toBe(true);
    const stoppedMs =
      Math.max(...running.brain.calls.filter((call) => call.task.startsWith('kid-')).map((call) => call.closedAt!)) -
      interruptedAt;
    console.log(`sub-agents interrupted: their model calls closed ${stoppedMs} ms after the parent's interrupt`);
    expect(stoppedMs).toBeLessThan(3_000);
    const children = childrenOf(await running.events(parent), parent.tenant);
    await running.waitForStatus(children, ['paused'], 10_000);
    for (const child of children) {
      const events = await running.events(child);
      expect(
        events.some(
          (event) =>
            event.type === 'interrupt' &&
            event.source === 'system' &&
            event.reason === 'its parent conversation was interrupted',
        ),
      ).toBe(true);
      expect(events.some((event) => event.type === 'action')).toBe(false);
    }
    expect(await running.status(parent)).toBe('paused');

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, slowUntil - Date.now())));
    expect((await running.api('POST', `/conversations/${parent.conversation}/run`)).status).toBeLessThan(300);
    await running.waitForStatus([parent], AT_REST, 60_000);
    expect(await running.status(parent)).toBe('finished');
    const outcome = await parentOutcome(running, parent);
    expect(outcome.answers.map((answer) => answer.content)).toEqual([
      [{ type: 'text', text: 'Done: 1 steps for kid-p.' }],
      [{ type: 'text', text: 'Done: 1 steps for kid-q.' }],
    ]);
    for (const child of children) {
      expect(await running.status(child)).toBe('finished');
      expect(
        (await running.events(child)).some(
          (event) => event.type === 'state_change' && event.reason === 'its parent conversation runs again',
        ),
      ).toBe(true);
    }
    await expectFamilyAudited(running, parent, 2);
  }, 180_000);
});
