import { WebhookEvent } from '@flotilla/api';
import { draftEvent, type EventDraft } from '@flotilla/events';
import { placeEvents, type StoredCommit } from '@flotilla/log';
import { conversationState, initialState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import { webhookEventId, webhookEventsOf } from './webhook-events.js';

const ref = { tenant: 'acme', conversation: 'c1' };
const at = (second: number) => ({ ...ref, now: () => new Date(Date.UTC(2026, 0, 1, 0, 0, second)) });
const status = (
  value: 'running' | 'finished' | 'waiting_for_confirmation' | 'idle',
  second: number,
  reason?: string,
): EventDraft =>
  draftEvent({ ...at(second), source: 'system' }, 'state_change', { status: value, ...(reason ? { reason } : {}) });
const action = (id: string, second: number) =>
  draftEvent({ ...at(second), source: 'agent' }, 'action', {
    tool_call_id: id,
    tool_name: 'terminal',
    arguments: '{"command":"rm -rf build"}',
    input: { command: 'rm -rf build' },
    thought: [],
    response_id: 'r1',
    security_risk: 'high',
  });
const message = (second: number) =>
  draftEvent({ ...at(second), source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'go' }] });

/** Consecutive commits of these groups of drafts, as the log places them. */
function commits(...groups: EventDraft[][]): StoredCommit[] {
  let last = 0;
  return groups.map((drafts, index) => {
    const events = placeEvents(ref, drafts, last);
    last += events.length;
    return {
      streamSeq: 10 + index,
      id: `c-${index}`,
      ...ref,
      firstSeq: events[0]!.seq,
      lastSeq: events.at(-1)!.seq,
      events,
    };
  });
}

describe('webhook events derived from a commit', () => {
  it('a status change is conversation.status_changed with the status before; to finished also conversation.finished', () => {
    const [start, finish] = commits([message(1), status('running', 2, 'run')], [status('finished', 3)]);
    const first = webhookEventsOf(start!, initialState());
    expect(first.events).toEqual([
      {
        v: 1,
        id: webhookEventId('acme', 'c1', start!.events[1]!.id, 'conversation.status_changed'),
        type: 'conversation.status_changed',
        created_at: '2026-01-01T00:00:02.000Z',
        tenant: 'acme',
        data: { conversation: 'c1', seq: 2, status: 'running', previous_status: 'idle', reason: 'run' },
      },
    ]);
    const second = webhookEventsOf(finish!, first.after);
    expect(second.events.map((event) => event.type)).toEqual(['conversation.status_changed', 'conversation.finished']);
    expect(second.events[1]!.data).toEqual({
      conversation: 'c1',
      seq: 3,
      status: 'finished',
      previous_status: 'running',
    });
    for (const event of [...first.events, ...second.events]) expect(WebhookEvent.parse(event)).toEqual(event);
  });

  it('setting the status the conversation has is no change', () => {
    const [start, again] = commits([status('running', 1)], [status('running', 2)]);
    expect(webhookEventsOf(again!, webhookEventsOf(start!, initialState()).after).events).toEqual([]);
  });

  it('waiting for confirmation names the actions that wait, even those before the status in the commit', () => {
    const [start, step] = commits(
      [status('running', 1)],
      [action('call_a', 2), action('call_b', 3), status('waiting_for_confirmation', 4)],
    );
    const { events } = webhookEventsOf(step!, conversationState(start!.events));
    expect(events.map((event) => event.type)).toEqual([
      'conversation.status_changed',
      'conversation.confirmation_pending',
    ]);
    const pending = events[1]!;
    expect(pending.type === 'conversation.confirmation_pending' && pending.data.actions).toEqual([
      { id: step!.events[0]!.id, tool_call_id: 'call_a', tool_name: 'terminal' },
      { id: step!.events[1]!.id, tool_call_id: 'call_b', tool_name: 'terminal' },
    ]);
  });

  it('ids are the same whenever derived, and differ by kind, event and conversation', () => {
    const id = webhookEventId('acme', 'c1', 'e1', 'conversation.finished');
    expect(id).toMatch(/^evt_[A-Za-z0-9_-]{32}$/);
    expect(webhookEventId('acme', 'c1', 'e1', 'conversation.finished')).toBe(id);
    expect(
      new Set([
        id,
        webhookEventId('acme', 'c1', 'e1', 'conversation.status_changed'),
        webhookEventId('acme', 'c1', 'e2', 'conversation.finished'),
        webhookEventId('acme', 'c2', 'e1', 'conversation.finished'),
        webhookEventId('globex', 'c1', 'e1', 'conversation.finished'),
      ]).size,
    ).toBe(5);
  });

  it('a commit with several changes gives each, in order', () => {
    const [commit] = commits([status('running', 1), status('finished', 2), status('idle', 3)]);
    expect(
      webhookEventsOf(commit!, initialState()).events.map(
        (event) =>
          `${event.type}:${'previous_status' in event.data ? event.data.previous_status : ''}->${event.data.status}`,
      ),
    ).toEqual([
      'conversation.status_changed:idle->running',
      'conversation.status_changed:running->finished',
      'conversation.finished:running->finished',
      'conversation.status_changed:finished->idle',
    ]);
  });
});
