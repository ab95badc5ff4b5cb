import { approveCommand } from '@flotilla/agent';
import type { Event } from '@flotilla/events';
import { conversationState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import { expectAudited } from '../support/audited.js';
import { startTestSystem } from '../support/system.js';

const AT_REST = ['waiting_for_confirmation', 'finished', 'error', 'stuck', 'idle', 'paused'];
const STEPS = 12;
/** Far above what the run writes (about 9 events a step with its approval, and the condensations); a condensation loop writes thousands. */
const MAX_EVENTS = 400;

function describeTail(events: readonly Event[]): string {
  return events
    .slice(-10)
    .map(
      (event) =>
        `#${event.seq} ${event.type}${event.type === 'state_change' ? ` ${event.status ?? ''} (${event.reason ?? ''})` : ''}${event.type === 'conversation_error' ? ` ${event.code}: ${event.detail}` : ''}`,
    )
    .join('\n');
}

describe('condensation through the services, bounded', () => {
  it('a model server that recycles its response ids, the smallest view limits and every action confirmed: the run finishes, condensations do not loop, the log audits clean', async () => {
    await using system = await startTestSystem({
      condensers: 1,
      modelResponseIds: 'recycled',
      agent: { condenser: { maxEvents: 8, keepFirst: 2 }, confirmation: { mode: 'always' } },
    });
    const ref = { tenant: 'acme', conversation: 'recycled-ids' };
    await system.start(ref, { id: 'recycled-ids', steps: STEPS });
    const deadline = Date.now() + 120_000;
    let seen = 0;
    let events: Event[] = [];
    for (;;) {
      events = await system.events(ref);
      expect(events.length, `the log grows without bound; it ends:\n${describeTail(events)}`).toBeLessThan(MAX_EVENTS);
      const rest = events.findLast(
        (event): event is Extract<Event, { type: 'state_change' }> =>
          event.type === 'state_change' && event.status !== undefined,
      );
      const resting = rest !== undefined && rest.seq > seen && AT_REST.includes(rest.status!);
      if (resting && rest.status === 'waiting_for_confirmation') {
        seen = rest.seq;
        await system.command(ref, (current) => approveCommand(conversationState(current), ref));
      } else if (resting) {
        break;
      }
      if (Date.now() > deadline) throw new Error(`no rest within 120 s; the log ends:\n${describeTail(events)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await system.status(ref), describeTail(events)).toBe('finished');
    const actions = events.filter((event) => event.type === 'action');
    expect(actions.length).toBeGreaterThanOrEqual(STEPS);
    // the server repeated ids; every step's response is still its own
    const provider = events.flatMap((event) =>
      event.type === 'llm_usage' && event.purpose === 'step' ? [event.response_id] : [],
    );
    expect(new Set(provider).size).toBeLessThan(provider.length);
    expect(new Set(actions.map((action) => action.response_id)).size).toBe(actions.length);
    const condensations = events.filter((event) => event.type === 'condensation').length;
    expect(condensations).toBeGreaterThanOrEqual(2);
    expect(condensations).toBeLessThanOrEqual(actions.length);
    expect(events.filter((event) => event.type === 'condensation_request').length).toBe(condensations);
    await expectAudited(system.log, ref);
  }, 180_000);
});
