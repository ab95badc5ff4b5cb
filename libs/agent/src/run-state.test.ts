import { draftEvent, type ConversationStatus, type Event, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { runState, RunStateFold, type RunState } from './run-state.js';
import { conversationFixture, realRunCommits } from './test-support/conversation-fixture.js';

/** Folding commit by commit must give, at every boundary, what a fold of the whole log gives. */
function expectSameAtEveryBoundary(commits: readonly (readonly Event[])[]): RunState[] {
  const fold = new RunStateFold();
  const events: Event[] = [];
  const states: RunState[] = [];
  for (const commit of commits) {
    fold.append(commit);
    events.push(...commit);
    expect(fold.state(), `after ${commit.map((event) => event.type).join(',')}`).toEqual(runState(events));
    states.push(fold.state());
  }
  return states;
}

describe('RunStateFold', () => {
  it('matches runState at every commit of real runs', async () => {
    await using fixture = await conversationFixture();
    const runs = await realRunCommits(fixture);
    for (const commits of runs) expectSameAtEveryBoundary(commits);
    expect(runs.flat().length).toBeGreaterThan(10);
  });

  it('counts steps and spend of the current run only; confirming actions does not start a new run', () => {
    const context = { tenant: 't', conversation: 'c', source: 'system' as const, now: () => new Date(0) };
    let seq = 0;
    const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
    const status = (value: ConversationStatus): Event =>
      event(draftEvent({ ...context, source: 'user' }, 'state_change', { status: value }));
    const usage = (cost: number, purpose: 'step' | 'condensation' = 'step'): Event =>
      event(
        draftEvent(context, 'llm_usage', {
          model: 'm',
          purpose,
          prompt_tokens: 1,
          completion_tokens: 1,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          reasoning_tokens: 0,
          latency_ms: 1,
          cost_usd: cost,
        }),
      );
    const prompt = event(draftEvent(context, 'system_prompt', { static_prompt: 'p', tools: [] }));
    const states = expectSameAtEveryBoundary([
      [status('running'), prompt, usage(0.5)],
      [usage(0.25, 'condensation'), usage(0.25)],
      [status('waiting_for_confirmation')],
      [status('running'), usage(1)],
      [status('paused'), usage(2)],
      [status('running')],
      [usage(0.125), status('finished')],
    ]);
    expect(states[1]).toMatchObject({
      status: 'running',
      runStart: 1,
      iterations: 2,
      spentUsd: 1,
      hasSystemPrompt: true,
    });
    // back from waiting for confirmation: the same run
    expect(states[3]).toMatchObject({ status: 'running', runStart: 1, iterations: 3, spentUsd: 2 });
    // a run after a pause starts over
    expect(states[5]).toMatchObject({ status: 'running', runStart: 11, iterations: 0, spentUsd: 0 });
    expect(states[6]).toMatchObject({
      status: 'finished',
      runStart: 11,
      iterations: 1,
      spentUsd: 0.125,
      hasSystemPrompt: true,
    });
  });
});
