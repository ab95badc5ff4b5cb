import type { Delivery } from '@flotilla/runtime';
import { describe, expect, it } from 'vitest';
import { DelegationWatch } from './delegation-watch.js';

const ref = { tenant: 'acme', conversation: 'c1' };

function commit(
  streamSeq: number,
  span: { firstSeq: number; lastSeq: number },
  types: string[] = ['observation'],
): Delivery {
  return { ref, streamSeq, eventSpan: () => span, eventTypes: () => types } as unknown as Delivery;
}

describe('DelegationWatch', () => {
  it('lets by the commits of a conversation in no delegation that hold no action and no sub-agent event', () => {
    const watch = new DelegationWatch();
    expect(watch.nothingDue(commit(1, { firstSeq: 1, lastSeq: 3 }, ['state_change', 'agent_spec', 'message']))).toBe(
      true,
    );
    expect(watch.nothingDue(commit(2, { firstSeq: 4, lastSeq: 5 }, ['llm_usage', 'action']))).toBe(false);
    watch.note(ref, { streamSeq: 2, lastSeq: 5 }, false);
    expect(watch.nothingDue(commit(3, { firstSeq: 6, lastSeq: 6 }, ['execution_started']))).toBe(true);
    expect(watch.nothingDue(commit(4, { firstSeq: 7, lastSeq: 7 }, ['observation']))).toBe(true);
  });

  it('goes the whole way for a parent or a child, for a first commit naming a parent, and for what it cannot place', () => {
    const watch = new DelegationWatch();
    expect(
      watch.nothingDue(commit(1, { firstSeq: 1, lastSeq: 3 }, ['state_change', 'agent_spec', 'subagent_task'])),
    ).toBe(false);
    watch.note(ref, { streamSeq: 1, lastSeq: 3 }, true);
    // involved: even a plain status change of it may owe its parent an answer
    expect(watch.nothingDue(commit(2, { firstSeq: 4, lastSeq: 4 }, ['state_change']))).toBe(false);
    watch.note(ref, { streamSeq: 2, lastSeq: 4 }, false);
    // a gap (another instance took commits), an old commit, a conversation met midway
    expect(watch.nothingDue(commit(4, { firstSeq: 6, lastSeq: 6 }))).toBe(false);
    expect(watch.nothingDue(commit(2, { firstSeq: 5, lastSeq: 5 }))).toBe(false);
    expect(new DelegationWatch().nothingDue(commit(9, { firstSeq: 20, lastSeq: 20 }))).toBe(false);
    expect(watch.nothingDue(commit(5, { firstSeq: 5, lastSeq: 5 }, ['subagent_started']))).toBe(false);
  });
});
