import { approveCommand } from '@flotilla/agent';
import type { Event } from '@flotilla/events';
import { conversationState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';
import { expectAudited } from '../support/audited.js';

// harmless if it ever ran (nothing is there), but a recursive rm outside the workspace to the rules, written `-fr`
const DESTRUCTIVE = 'rm -fr /nonexistent/flotilla-security-analyzer-test';
const HARMLESS = 'echo fine >> effects.log';
const ENDED = ['waiting_for_confirmation', 'finished', 'error', 'stuck'] as const;

const actionsOf = (events: readonly Event[]) => events.filter((event) => event.type === 'action');
const lastStateChange = (events: readonly Event[]) => events.filter((event) => event.type === 'state_change').at(-1);

describe('the security analyzer, through the services', () => {
  it('asks before a destructive command the model called low, naming the rule; a harmless one runs without asking', async () => {
    await using system = await startTestSystem({ agent: { confirmation: { mode: 'risky', threshold: 'high' } } });
    const risky = { tenant: 'acme', conversation: 'destructive' };
    const calm = { tenant: 'acme', conversation: 'harmless' };
    await system.start(risky, { id: 'destructive', steps: 1, commands: [DESTRUCTIVE] });
    await system.start(calm, { id: 'harmless', steps: 1, commands: [HARMLESS] });
    await system.waitForStatus([risky, calm], [...ENDED], 60_000);

    expect(await system.status(risky)).toBe('waiting_for_confirmation');
    const events = await system.events(risky);
    const [action] = actionsOf(events);
    // the model said low; the rules say high, and that is what the action carries
    expect(JSON.parse(action?.type === 'action' ? action.arguments : '{}')).toMatchObject({
      command: DESTRUCTIVE,
      security_risk: 'low',
    });
    expect(action).toMatchObject({ tool_name: 'terminal', security_risk: 'high' });
    expect(lastStateChange(events)).toMatchObject({
      status: 'waiting_for_confirmation',
      reason: 'actions need confirmation: terminal command matches "rm -rf outside the workspace" (high)',
    });
    expect(events.some((event) => event.type === 'execution_started' || event.type === 'observation')).toBe(false);

    expect(await system.status(calm)).toBe('finished');
    const calmEvents = await system.events(calm);
    expect(actionsOf(calmEvents)).toMatchObject([{ tool_name: 'terminal', security_risk: 'low' }]);
    expect(
      calmEvents.some((event) => event.type === 'state_change' && event.status === 'waiting_for_confirmation'),
    ).toBe(false);

    // approved, it runs (and does nothing: there is nothing at that path) and the run finishes
    await system.command(risky, (current) => approveCommand(conversationState(current), risky));
    await system.waitForStatus([risky], ['finished', 'error', 'stuck'], 60_000);
    expect(await system.status(risky)).toBe('finished');
    for (const ref of [risky, calm]) {
      await expectAudited(system.log, ref);
    }
  }, 120_000);

  it('with the rules analyzer switched off, the same command runs on the model’s word', async () => {
    await using system = await startTestSystem({
      agent: { confirmation: { mode: 'risky', threshold: 'high' }, security: { analyzers: ['model'] } },
    });
    const ref = { tenant: 'acme', conversation: 'model-only' };
    await system.start(ref, { id: 'model-only', steps: 1, commands: [DESTRUCTIVE] });
    await system.waitForStatus([ref], [...ENDED], 60_000);
    expect(await system.status(ref)).toBe('finished');
    const events = await system.events(ref);
    expect(actionsOf(events)).toMatchObject([{ tool_name: 'terminal', security_risk: 'low' }]);
    expect(events.some((event) => event.type === 'state_change' && event.status === 'waiting_for_confirmation')).toBe(
      false,
    );
    await expectAudited(system.log, ref);
  }, 120_000);
});
