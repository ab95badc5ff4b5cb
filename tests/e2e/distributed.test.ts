import { auditConversation } from '@flotilla/auditor';
import { INTERRUPTED_MESSAGE } from '@flotilla/agent';
import { readFile } from 'node:fs/promises';
import { RunnerRegistry } from '@flotilla/runtime';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

describe('the distributed runtime, one process per service', () => {
  it('runs a conversation to finished through real tools', async () => {
    await using system = await startTestSystem();
    const ref = { tenant: 'acme', conversation: 'first' };
    await system.start(ref, { id: 'first', steps: 3 });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const types = events.map((event) => event.type);
    expect(types.filter((type) => type === 'action')).toHaveLength(3);
    expect(types.filter((type) => type === 'observation')).toHaveLength(3);
    expect(types.filter((type) => type === 'execution_started')).toHaveLength(3);
    const effects = await system.readEffects();
    expect(effects).toEqual(['first 0 0', 'first 1 0', 'first 2 0']);
    expect(events.at(-1)).toMatchObject({ type: 'state_change', status: 'finished' });
    await expectAudited(system.log, ref);

    // a run the agent ends with its finish tool: the step worker ends it without asking the model again
    const finishing = { tenant: 'acme', conversation: 'finishing' };
    await system.start(finishing, {
      id: 'finishing',
      steps: 2,
      calls: [
        { tool: 'think', input: { thought: 'one' } },
        { tool: 'finish', input: { message: 'all done' } },
      ],
    });
    await system.waitForStatus([finishing], ['finished', 'error', 'stuck'], 60_000);
    const finished = await system.events(finishing);
    expect(finished.slice(-2)).toMatchObject([
      { type: 'observation', tool_name: 'finish', is_error: false },
      { type: 'state_change', status: 'finished', reason: 'the agent called finish' },
    ]);
    expect(system.brain.calls.filter((call) => call.task === 'finishing')).toHaveLength(2);
    expect((await auditConversation(system.log, finishing)).violations).toEqual([]);
  }, 120_000);

  it('a tool runner SIGKILLed mid-action: the cut-off action gets an error saying so, never runs again, and the run finishes', async () => {
    await using system = await startTestSystem({ toolRunners: 1 });
    const ref = { tenant: 'acme', conversation: 'cut-off' };
    await system.start(ref, { id: 'cut-off', steps: 2, sleep: 4 });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const events = await system.events(ref);
      if (events.some((event) => event.type === 'execution_started')) break;
      if (Date.now() > deadline) throw new Error('no action started within 60 s');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const runner = system.processes.find((process) => process.name.startsWith('tool-runner'))!;
    await runner.kill('SIGKILL');
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 90_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    const firstAction = events.find((event) => event.type === 'action')!;
    const answers = events.filter(
      (event) =>
        (event.type === 'observation' || event.type === 'agent_error') &&
        event.tool_call_id === firstAction.tool_call_id,
    );
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ type: 'agent_error', error: INTERRUPTED_MESSAGE });
    const effects = await system.readEffects();
    expect(effects).not.toContain('cut-off 0 0');
    await expectAudited(system.log, ref);
  }, 150_000);

  it('a tool runner stalled past the liveness window loses its workspace to another; resumed, it forwards to the new owner instead of running there', async () => {
    await using system = await startTestSystem({ toolRunners: 2 });
    const runners = await RunnerRegistry.open(system.nc, { livenessMs: 3_000 });
    const ref = { tenant: 'acme', conversation: 'stalled-owner' };
    // the first shell keeps MARK; any other runner's shell for this conversation starts without it
    const commands = [
      'export MARK=first; echo set',
      ...Array.from({ length: 9 }, (_, step) => `echo "mark=[$MARK] step ${step + 1}"`),
    ];
    await system.start(ref, { id: ref.conversation, steps: commands.length, commands, latencyMs: 1_000 });
    const observations = async (): Promise<string[]> =>
      (await system.events(ref))
        .filter((event) => event.type === 'observation')
        .map((event) => event.content.map((part) => (part.type === 'text' ? part.text : '')).join(''));
    await expect.poll(observations, { timeout: 30_000, interval: 50 }).toHaveLength(1);
    const first = (await runners.owner(ref))!.runner;
    // the owner is the runner process holding the conversation's shell (the only sandbox here): a bwrap under it
    // (whose command line names no host path: its options come through a pipe)
    const holds = async (pid: number): Promise<boolean> => {
      const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => ''))
        .split(' ')
        .filter(Boolean)
        .map(Number);
      for (const child of children) {
        if (
          (await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).startsWith('bwrap\0') ||
          (await holds(child))
        )
          return true;
      }
      return false;
    };
    const toolRunners = system.processes.filter((process) => process.name.startsWith('tool-runner'));
    const held = await Promise.all(toolRunners.map((process) => holds(process.pid!)));
    expect(held.filter(Boolean)).toHaveLength(1);
    const owner = toolRunners[held.indexOf(true)]!;

    process.kill(owner.pid!, 'SIGSTOP');
    try {
      // its heartbeat ages out; the other runner takes the workspace for the next action
      await expect
        .poll(async () => (await runners.owner(ref))?.runner, { timeout: 30_000, interval: 100 })
        .not.toBe(first);
    } finally {
      process.kill(owner.pid!, 'SIGCONT');
    }
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 90_000);
    expect(await system.status(ref)).toBe('finished');
    const texts = await observations();
    expect(texts[0]).toContain('set');
    // every later command ran in the new owner's shell, including those delivered to the resumed runner
    expect(texts.slice(1)).toHaveLength(commands.length - 1);
    for (const text of texts.slice(1)) expect(text).toContain('mark=[]');
    await expectAudited(system.log, ref);
  }, 150_000);
});
