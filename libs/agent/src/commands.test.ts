import type { ConversationStatus, Event } from '@flotilla/events';
import { conversationState } from '@flotilla/state';
import { describe, expect, it } from 'vitest';
import {
  approveCommand,
  CommandRefused,
  interruptCommand,
  messageCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
} from './commands.js';
import { currentStatus } from './run-state.js';

const ref = { tenant: 'acme', conversation: 'c' };
let seq = 0;
const base = () => ({
  v: 1 as const,
  id: `e${++seq}`,
  seq,
  tenant: 'acme',
  conversation: 'c',
  timestamp: '2026-01-01T00:00:00.000Z',
});
const status = (value: ConversationStatus): Event => ({
  ...base(),
  source: 'system',
  type: 'state_change',
  status: value,
});
const action = (id: string): Event => ({
  ...base(),
  id,
  source: 'agent',
  type: 'action',
  tool_call_id: `call_${id}`,
  tool_name: 'terminal',
  arguments: '{}',
  input: { command: 'rm -rf build' },
  thought: [],
  response_id: 'r1',
  security_risk: 'high',
});
const of = (...events: Event[]) => conversationState(events);
const after = (events: Event[], drafts: readonly { type: string }[]): ConversationStatus =>
  currentStatus([...events, ...drafts.map((draft) => ({ ...base(), ...draft }) as Event)]);

describe('the status machine as commands', () => {
  it('a message resets finished and stuck to idle, and run starts a resting conversation', () => {
    expect(after([status('finished')], messageCommand(of(status('finished')), ref, 'more'))).toBe('idle');
    expect(after([status('stuck')], messageCommand(of(status('stuck')), ref, 'more'))).toBe('idle');
    expect(after([status('finished')], messageCommand(of(status('finished')), ref, 'more', { run: true }))).toBe(
      'running',
    );
    for (const resting of ['idle', 'paused', 'error', 'finished', 'stuck'] as const) {
      expect(after([status(resting)], runCommand(of(status(resting)), ref))).toBe('running');
    }
  });

  it('refuses run on a running conversation with a clear conflict (unless resuming in-process)', () => {
    expect(() => runCommand(of(status('running')), ref)).toThrow(CommandRefused);
    expect(() => runCommand(of(status('running')), ref)).toThrow(/already running/);
    expect(runCommand(of(status('running')), ref, { resume: true })).toEqual([]);
  });

  it('pause is idempotent and never overrides waiting_for_confirmation; interrupt pauses a running one', () => {
    expect(after([status('running')], pauseCommand(of(status('running')), ref))).toBe('paused');
    expect(pauseCommand(of(status('paused')), ref)).toEqual([]);
    expect(pauseCommand(of(status('waiting_for_confirmation')), ref)).toEqual([]);
    const interrupt = interruptCommand(of(status('running')), ref, 'stop');
    expect(interrupt.map((draft) => draft.type)).toEqual(['interrupt', 'state_change']);
    expect(interruptCommand(of(status('idle')), ref)).toEqual([]);
  });

  it('approve records an approval and runs; reject answers every pending action and goes idle', () => {
    const waiting = [status('running'), action('a1'), action('a2'), status('waiting_for_confirmation')];
    const approve = approveCommand(conversationState(waiting), ref);
    expect(approve[0]).toMatchObject({ type: 'approval', action_ids: ['a1', 'a2'] });
    expect(after(waiting, approve)).toBe('running');
    expect(after(waiting, runCommand(conversationState(waiting), ref))).toBe('running');
    const reject = rejectCommand(conversationState(waiting), ref, 'too risky');
    expect(reject.filter((draft) => draft.type === 'user_rejection')).toHaveLength(2);
    expect(after(waiting, reject)).toBe('idle');
    expect(() => approveCommand(of(status('running')), ref)).toThrow(/Nothing awaits confirmation/);
  });
});
