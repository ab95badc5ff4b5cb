import type { Event } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { nextWork, stepNeverDueAfter } from './next-work.js';
import { conversationFixture, realRunCommits } from './test-support/conversation-fixture.js';

describe('stepNeverDueAfter', () => {
  it('names only commits of actions and execution starts, never an unknown or empty list', () => {
    expect(stepNeverDueAfter(['llm_usage', 'action'])).toBe(true);
    expect(stepNeverDueAfter(['execution_started'])).toBe(true);
    expect(stepNeverDueAfter(['system_prompt', 'llm_usage', 'action'])).toBe(true);
    expect(stepNeverDueAfter(['llm_usage', 'action', 'agent_error'])).toBe(false);
    expect(stepNeverDueAfter(['llm_usage', 'action', 'state_change'])).toBe(false);
    expect(stepNeverDueAfter(['llm_usage'])).toBe(false);
    expect(stepNeverDueAfter(['observation'])).toBe(false);
    expect(stepNeverDueAfter([])).toBe(false);
  });

  it('holds at every commit of real runs: after a commit it names, nextWork is never a step (nor the end of the run)', async () => {
    await using fixture = await conversationFixture();
    let named = 0;
    let checked = 0;
    for (const commits of await realRunCommits(fixture)) {
      const events: Event[] = [];
      for (const commit of commits) {
        events.push(...commit);
        checked += 1;
        if (!stepNeverDueAfter([...new Set(commit.map((event) => event.type))])) continue;
        named += 1;
        expect(
          ['step', 'finish'],
          `after commit ${checked} (${commit.map((event) => event.type).join(',')})`,
        ).not.toContain(nextWork(events).kind);
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(named).toBeGreaterThanOrEqual(8);
  });
});
