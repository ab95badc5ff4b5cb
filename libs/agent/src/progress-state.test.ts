import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import { conversationState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import { ConversationProgress } from './progress.js';

const context = { tenant: 't', conversation: 'c', source: 'agent' as const, now: () => new Date(0) };
let seq = 0;
const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
const action = (callId: string, input: Record<string, unknown> | null = { thought: callId }): Event =>
  event(
    draftEvent(context, 'action', {
      tool_name: 'think',
      tool_call_id: callId,
      arguments: '{}',
      input,
      thought: [],
      response_id: 'r',
      security_risk: 'low',
    }),
  );
const observation = (callId: string): Event =>
  event(
    draftEvent({ ...context, source: 'environment' }, 'observation', {
      tool_name: 'think',
      tool_call_id: callId,
      action_id: 'x',
      content: [],
      is_error: false,
    }),
  );
const running = (): Event => event(draftEvent({ ...context, source: 'system' }, 'state_change', { status: 'running' }));

describe('ConversationProgress, the snapshot’s fold', () => {
  it('holds the same state as the snapshot fold (conversationState), and an action reusing an answered tool call id waits for its own answer', () => {
    const first = action('call_0');
    const again = action('call_0');
    const events = [running(), first, observation('call_0'), again];
    const progress = ConversationProgress.of(events);
    expect(progress.state).toEqual(conversationState(events));
    expect(progress.nextWork()).toEqual({ kind: 'execute', actions: [again], interrupted: [] });
    expect(progress.answered('call_0')).toBe(false);
    progress.append([observation('call_0')]);
    expect(progress.answered('call_0')).toBe(true);
    expect(progress.nextWork()).toEqual({ kind: 'step' });
  });

  it('an unparseable call is never run but its error is not taken for an early answer', () => {
    const bad = action('call_bad', null);
    const error = event(
      draftEvent({ ...context, source: 'environment' }, 'agent_error', {
        tool_call_id: 'call_bad',
        tool_name: 'think',
        action_id: bad.id,
        error: 'bad JSON',
      }),
    );
    const progress = ConversationProgress.of([running(), bad]);
    expect(progress.nextWork()).toEqual({ kind: 'step' });
    progress.append([error, action('call_bad')]);
    expect(progress.state.early_answers).toEqual([]);
    expect(progress.nextWork().kind).toBe('execute');
  });

  it('goes on from its checkpoint as from the events', () => {
    const [a, b] = [action('call_a'), action('call_b')];
    const started = event(
      draftEvent({ ...context, source: 'system' }, 'execution_started', { action_ids: [a.id], runner: 'runner-a' }),
    );
    const events = [running(), observation('call_early'), a, b, action('call_unparseable', null), started];
    const resumed = ConversationProgress.resume(ConversationProgress.of(events).checkpoint());
    const rest = [observation('call_a'), action('call_early')];
    resumed.append(rest);
    const whole = ConversationProgress.of([...events, ...rest]);
    expect(resumed.state).toEqual(whole.state);
    expect(resumed.pending()).toEqual(whole.pending());
    expect(resumed.length).toBe(whole.length);
  });
});
