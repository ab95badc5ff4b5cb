import { describe, expect, it } from 'vitest';
import { INTERRUPTED_MESSAGE } from '@flotilla/agent';
import { partitionOwners } from '@flotilla/bus';
import { subjectPartition } from '@flotilla/log';
import { basicViolations, effectCounts } from '../support/log-checks.js';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';
import { sumByLabel } from '../bench/process-stats.js';

describe('scale-out', () => {
  it('2 step workers and 2 tool runners finish 50 concurrent conversations with clean logs', async () => {
    await using system = await startTestSystem({ stepWorkers: 2, toolRunners: 2 });
    const refs = Array.from({ length: 50 }, (_, index) => ({
      tenant: `t${index % 3}`,
      conversation: `scale-${index}`,
    }));
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 3, parallel: 2 })));
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 120_000);
    const effects = await effectCounts(await system.readEffects());
    for (const ref of refs) {
      expect(await system.status(ref)).toBe('finished');
      const events = await system.events(ref);
      expect(basicViolations(events)).toEqual([]);
      await expectAudited(system.log, ref);
      for (let step = 0; step < 3; step += 1) {
        for (let index = 0; index < 2; index += 1) expect(effects.get(`${ref.conversation} ${step} ${index}`)).toBe(1);
      }
    }
    // both runners did work, each in the workspaces of the partitions it owns (none claimed by the other, so nothing forwarded)
    const ranRuns = new Map<string, Set<string>>();
    for (const ref of refs)
      for (const event of await system.events(ref))
        if (event.type === 'execution_started')
          ranRuns.set(ref.conversation, (ranRuns.get(ref.conversation) ?? new Set()).add(event.runner));
    const runners = new Set([...ranRuns.values()].flatMap((ran) => [...ran]));
    expect(runners.size).toBe(2);
    const owners = partitionOwners(runners);
    for (const ref of refs) {
      const { tail } = await system.log.readEvents(ref);
      const stored = await system.log.jsm.direct.getMessage(system.log.streamName, { seq: tail.streamSeq });
      const partition = subjectPartition(system.log.subjectPrefix, stored!.subject)!;
      expect([...ranRuns.get(ref.conversation)!], ref.conversation).toEqual([owners[partition]]);
    }
  }, 240_000);

  it('a step worker and a tool runner SIGKILLed under load: their partitions move to the survivors, every conversation finishes, no effect runs twice', async () => {
    await using system = await startTestSystem({ stepWorkers: 2, toolRunners: 2 });
    const refs = Array.from({ length: 40 }, (_, index) => ({
      tenant: `t${index % 2}`,
      conversation: `moved-${index}`,
    }));
    const steps = 6;
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps, parallel: 1, sleep: 0.2 })));
    /** The partitions each instance was delivered commits on, and how many. */
    const partitionsOf = (name: string) =>
      sumByLabel(`${system.healthUrls.get(name)!}/metrics`, 'flotilla_deliveries_total', 'consumer');
    // under way: every conversation has run a step's action
    await expect
      .poll(async () => (await system.readEffects()).length, { timeout: 60_000, interval: 250 })
      .toBeGreaterThanOrEqual(refs.length);
    const before = new Map(
      await Promise.all(
        ['step-worker-1', 'step-worker-2', 'tool-runner-1', 'tool-runner-2'].map(
          async (name) => [name, await partitionsOf(name)] as const,
        ),
      ),
    );
    for (const name of ['step-worker-1', 'tool-runner-1'])
      await system.processes.find((child) => child.name === name)!.kill('SIGKILL', { restart: false });
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 120_000);

    const effects = effectCounts(await system.readEffects());
    // no action ran twice; one cut off by the kill ran at most once and was answered with an error saying so
    expect([...effects.values()].filter((count) => count !== 1)).toEqual([]);
    for (const ref of refs) {
      expect(await system.status(ref)).toBe('finished');
      const events = await system.events(ref);
      expect(basicViolations(events)).toEqual([]);
      await expectAudited(system.log, ref);
      const actions = events.filter((event) => event.type === 'action');
      const answers = events.filter((event) => event.type === 'observation' || event.type === 'agent_error');
      for (const action of actions)
        expect(answers.filter((answer) => answer.tool_call_id === action.tool_call_id)).toHaveLength(1);
      const interrupted = answers.filter(
        (answer) => answer.type === 'agent_error' && answer.error === INTERRUPTED_MESSAGE,
      ).length;
      const missing = Array.from({ length: steps }, (_, step) => `${ref.conversation} ${step} 0`).filter(
        (line) => !effects.has(line),
      ).length;
      expect(missing).toBeLessThanOrEqual(interrupted);
    }
    // the partitions the dead instance held before (delivered more of their commits than the survivor,
    // which a full instance's overflow may also have been delivered some of) are the survivor's now:
    // every conversation finished (above), and the survivor was delivered more of their commits after
    // the kill (a partition whose conversations had all finished before it has none left to deliver)
    for (const [dead, survivor] of [
      ['step-worker-1', 'step-worker-2'],
      ['tool-runner-1', 'tool-runner-2'],
    ] as const) {
      const survivorBefore = before.get(survivor)!;
      const deadHeld = [...before.get(dead)!]
        .filter(([consumer, count]) => /-p\d+$/.test(consumer) && count > (survivorBefore.get(consumer) ?? 0))
        .map(([consumer]) => consumer);
      expect(deadHeld.length).toBeGreaterThan(0);
      const after = await partitionsOf(survivor);
      expect(
        deadHeld.filter((consumer) => (after.get(consumer) ?? 0) > (survivorBefore.get(consumer) ?? 0)),
        `${survivor} took none of ${dead}'s partitions (${deadHeld.join(', ')})`,
      ).not.toEqual([]);
    }
  }, 240_000);
});
