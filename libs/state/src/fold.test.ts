import type { EventDraft } from '@flotilla/events';
import type { StoredCommit } from '@flotilla/log';
import { describe, expect, it } from 'vitest';
import { ConversationSnapshot, CURRENT_SNAPSHOT_VERSION } from './conversation-snapshot.js';
import { conversationState, MAX_EARLY_ANSWERS, notStartedActions } from './conversation-state.js';
import { CommitOrderError, StateError } from './errors.js';
import { applyCommit, foldCommits, initialSnapshot } from './fold.js';
import { commitsOf, EventFactory } from './test-support/events.js';

const ref = { tenant: 'acme', conversation: 'c1' };

function fold(groups: readonly (readonly EventDraft[])[]): ConversationSnapshot {
  return foldCommits(initialSnapshot(ref), commitsOf(ref, groups));
}

describe('initialSnapshot', () => {
  it('is a valid, idle, empty snapshot', () => {
    const snapshot = initialSnapshot(ref);
    expect(ConversationSnapshot.parse(snapshot)).toEqual(snapshot);
    expect(snapshot).toMatchObject({
      v: CURRENT_SNAPSHOT_VERSION,
      status: 'idle',
      last_seq: 0,
      last_stream_seq: 0,
      commits: 0,
      created_at: null,
      title: null,
      tags: [],
    });
    expect(snapshot).toMatchObject({
      pending_actions: [],
      early_answers: [],
      condensation_requested: false,
      event_counts: {},
      final_response: null,
    });
    expect(Object.values(snapshot.counters).every((value) => value === 0)).toBe(true);
  });

  it('refuses ids that cannot be KV key tokens', () => {
    expect(() => initialSnapshot({ tenant: 'a.b', conversation: 'c' })).toThrow(StateError);
  });
});

describe('applyCommit, per event type', () => {
  it('counts messages by who wrote them', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([
      [events.userMessage(), events.environmentMessage()],
      [events.agentMessage(), events.userMessage()],
    ]);
    expect(snapshot.counters).toMatchObject({ events: 4, user_messages: 2, agent_messages: 1 });
  });

  it('counts actions, observations, tool errors, free-standing errors and rejections', () => {
    const events = new EventFactory(ref);
    const a = events.action('call_a');
    const b = events.action('call_b');
    const c = events.action('call_c');
    const d = events.action('call_d');
    const snapshot = fold([
      [a, b, c, d],
      [events.observation(a), events.observation(b, true), events.toolError(c)],
      [events.rejection(d)],
      [events.stateChange({ status: 'running' })],
    ]);
    expect(snapshot.counters).toMatchObject({ events: 9, actions: 4, observations: 2, agent_errors: 1, rejections: 1 });
  });

  it('counts condensations but not condensation requests', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([[events.condensationRequest()], [events.condensation(['x'])]]);
    expect(snapshot.counters).toMatchObject({ events: 2, condensations: 1 });
  });

  it('counts a secret change as an event and changes nothing else but the position', () => {
    const events = new EventFactory(ref);
    const [start, secrets] = commitsOf(ref, [
      [events.stateChange({ status: 'running', title: 'T' })],
      [events.secretChanged('GITHUB_TOKEN', 'set'), events.secretChanged('GITHUB_TOKEN', 'removed')],
    ]);
    const before = applyCommit(initialSnapshot(ref), start!);
    const after = applyCommit(before, secrets!);
    expect(after).toEqual({
      ...before,
      last_seq: 3,
      last_stream_seq: secrets!.streamSeq,
      commits: 2,
      updated_at: secrets!.events[1]!.timestamp,
      counters: { ...before.counters, events: 3 },
      event_counts: { ...before.event_counts, secret_changed: { user: 2 } },
    });
  });

  it('sums llm usage and counts calls', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([
      [events.llmUsage({ prompt: 1000, completion: 50, cacheRead: 800, cacheWrite: 100, reasoning: 30, cost: 0.25 })],
      [
        events.agentMessage(),
        events.llmUsage({ prompt: 1200, completion: 70, cacheRead: 1000, cacheWrite: 0, reasoning: 0, cost: 0.5 }),
      ],
    ]);
    expect(snapshot.counters.llm_calls).toBe(2);
    expect(snapshot.usage).toEqual({
      prompt_tokens: 2200,
      completion_tokens: 120,
      cache_read_tokens: 1800,
      cache_write_tokens: 100,
      reasoning_tokens: 30,
      cost_usd: 0.75,
    });
  });

  it('takes status, title, tags and settings_ref from the last state change that sets each', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([
      [events.stateChange({ status: 'running', title: 'First', tags: ['a', 'b'], settings_ref: 'settings-1' })],
      [events.stateChange({ title: 'Second' })],
      [events.stateChange({ status: 'paused' }), events.stateChange({ tags: [] })],
    ]);
    expect(snapshot).toMatchObject({ status: 'paused', title: 'Second', tags: [], settings_ref: 'settings-1' });
  });

  it('mirrors the log even where the status machine would object', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([
      [events.stateChange({ status: 'finished' })],
      [events.stateChange({ status: 'waiting_for_confirmation' })],
    ]);
    expect(snapshot.status).toBe('waiting_for_confirmation');
  });

  it('keeps the last conversation error until the status goes running', () => {
    const events = new EventFactory(ref);
    const failed = fold([
      [events.stateChange({ status: 'running' })],
      [events.conversationError('budget', 'over budget'), events.stateChange({ status: 'error' })],
      [events.conversationError('max_iterations', 'too many steps')],
    ]);
    expect(failed.last_error).toEqual({ code: 'max_iterations', detail: 'too many steps', seq: 4 });
    expect(failed.status).toBe('error');
    const paused = applyCommit(failed, commitAfter(failed, [events.stateChange({ status: 'paused' })]));
    expect(paused.last_error).toEqual(failed.last_error);
    const resumed = applyCommit(paused, commitAfter(paused, [events.stateChange({ status: 'running' })]));
    expect(resumed.last_error).toBeNull();
  });

  it('notes where the latest run began: a running status set from rest, not an approval going on with the run', () => {
    const events = new EventFactory(ref);
    const first = fold([
      [events.userMessage(), events.stateChange({ status: 'running' })],
      [events.stateChange({ status: 'waiting_for_confirmation' })],
      [events.stateChange({ status: 'running' })],
    ]);
    expect(first.run_started).toEqual({ seq: 2, at: expect.any(String) });
    const finished = applyCommit(first, commitAfter(first, [events.stateChange({ status: 'finished' })]));
    expect(finished.run_started?.seq).toBe(2);
    const again = applyCommit(
      finished,
      commitAfter(finished, [events.userMessage('more'), events.stateChange({ status: 'running' })]),
    );
    expect(again.run_started?.seq).toBe(7);
    expect(fold([[events.userMessage()]]).run_started).toBeNull();
  });

  it('leaves counters alone for events it only counts (pause, system prompt, hooks)', () => {
    const events = new EventFactory(ref);
    const snapshot = fold([[events.pause()]]);
    expect(snapshot.counters).toEqual({ ...initialSnapshot(ref).counters, events: 1 });
  });

  it('takes created_at and updated_at from event timestamps, not the clock', () => {
    const events = new EventFactory(ref, Date.parse('2020-05-01T10:00:00.000Z'));
    const snapshot = fold([[events.userMessage(), events.agentMessage()], [events.userMessage()]]);
    expect(snapshot.created_at).toBe('2020-05-01T10:00:00.000Z');
    expect(snapshot.updated_at).toBe('2020-05-01T10:00:02.000Z');
  });

  it('tracks its log position and commit count', () => {
    const events = new EventFactory(ref);
    const commits = commitsOf(ref, [[events.userMessage()], [events.agentMessage(), events.userMessage()]], 10, 5);
    const snapshot = foldCommits(initialSnapshot(ref), commits);
    expect(snapshot).toMatchObject({ last_seq: 3, last_stream_seq: 15, commits: 2 });
    expect(ConversationSnapshot.parse(snapshot)).toEqual(snapshot);
  });

  it('does not change the snapshot it is given', () => {
    const events = new EventFactory(ref);
    const [first, second] = commitsOf(ref, [
      [events.stateChange({ tags: ['x'] })],
      [events.stateChange({ tags: ['y'] }), events.llmUsage()],
    ]);
    const before = applyCommit(initialSnapshot(ref), first!);
    const copy = structuredClone(before);
    applyCommit(before, second!);
    expect(before).toEqual(copy);
  });
});

describe('applyCommit, what commands decide from', () => {
  it('counts events by type and source, adding up to every event', () => {
    const events = new EventFactory(ref);
    const a = events.action('call_a');
    const snapshot = fold([
      [events.userMessage(), events.environmentMessage(), events.stateChange({ status: 'running' })],
      [a, events.llmUsage()],
      [events.observation(a), events.agentMessage()],
    ]);
    expect(snapshot.event_counts).toEqual({
      message: { user: 1, environment: 1, agent: 1 },
      state_change: { system: 1 },
      action: { agent: 1 },
      llm_usage: { system: 1 },
      observation: { environment: 1 },
    });
  });

  it('keeps the actions waiting for a result, who started them, and drops them when answered', () => {
    const events = new EventFactory(ref);
    const [a, b, c, bad] = [
      events.action('call_a'),
      events.action('call_b'),
      events.action('call_c'),
      events.action('call_bad', 'terminal', null),
    ];
    const waiting = fold([[a, b, c, bad, events.toolError(bad)], [events.executionStarted('runner-1', a)]]);
    expect(
      waiting.pending_actions.map((action) => [action.tool_call_id, action.executable, action.started_by]),
    ).toEqual([
      ['call_a', true, 'runner-1'],
      ['call_b', true, null],
      ['call_c', true, null],
    ]);
    expect(notStartedActions(waiting).map((action) => action.tool_call_id)).toEqual(['call_b', 'call_c']);
    expect(waiting.early_answers).toEqual([]); // the unparseable call's error answered it, nothing early
    const answered = applyCommit(waiting, commitAfter(waiting, [events.observation(a), events.rejection(c)]));
    expect(answered.pending_actions.map((action) => action.tool_call_id)).toEqual(['call_b']);
  });

  it('holds an answer logged before its action, which then never waits; at most MAX_EARLY_ANSWERS are held', () => {
    const events = new EventFactory(ref);
    const late = events.action('call_late');
    const snapshot = fold([[events.observation(late)], [late]]);
    expect(snapshot.pending_actions).toEqual([]);
    expect(snapshot.early_answers).toEqual([]);
    const many = Array.from({ length: MAX_EARLY_ANSWERS + 5 }, (_, index) =>
      events.observation(events.action(`call_${index}`)),
    );
    const held = fold([many]);
    expect(held.early_answers).toHaveLength(MAX_EARLY_ANSWERS);
    expect(held.early_answers[0]).toBe('call_5');
    expect(ConversationSnapshot.parse(held)).toEqual(held);
  });

  it('notes an open condensation request until a condensation answers it', () => {
    const events = new EventFactory(ref);
    const requested = fold([[events.condensationRequest()]]);
    expect(requested.condensation_requested).toBe(true);
    expect(applyCommit(requested, commitAfter(requested, [events.condensation()])).condensation_requested).toBe(false);
  });

  it('points at the final response: the last agent message or finish message since the last user message', () => {
    const events = new EventFactory(ref);
    const commits = commitsOf(
      ref,
      [
        [events.userMessage()],
        [events.agentMessage('first')],
        [events.action('call_f', 'finish', { message: 'done' }), events.llmUsage()],
      ],
      10,
      5,
    );
    const answered = foldCommits(initialSnapshot(ref), commits);
    expect(answered.final_response).toEqual({ seq: 3, stream_seq: 20 });
    expect(foldCommits(initialSnapshot(ref), commits.slice(0, 2)).final_response).toEqual({ seq: 2, stream_seq: 15 });
    expect(
      applyCommit(answered, commitAfter(answered, [events.userMessage('more'), events.environmentMessage()]))
        .final_response,
    ).toBeNull();
    expect(applyCommit(answered, commitAfter(answered, [events.action('call_t', 'terminal')])).final_response).toEqual(
      answered.final_response,
    );
  });

  it('folds the same state as conversationState over the events', () => {
    const events = new EventFactory(ref);
    const a = events.action('call_a');
    const commits = commitsOf(ref, [
      [events.stateChange({ status: 'running' }), a, events.condensationRequest()],
      [events.executionStarted('r', a)],
      [events.observation(events.action('call_x'))],
    ]);
    const snapshot = foldCommits(initialSnapshot(ref), commits);
    const { status, pending_actions, early_answers, condensation_requested } = snapshot;
    expect(conversationState(commits.flatMap((commit) => commit.events))).toEqual({
      status,
      pending_actions,
      early_answers,
      condensation_requested,
    });
  });
});

describe('applyCommit, positions', () => {
  const events = new EventFactory(ref);
  const commits = commitsOf(ref, [
    [events.userMessage()],
    [events.agentMessage(), events.llmUsage()],
    [events.userMessage()],
  ]);

  it('is idempotent: a commit at or before last_stream_seq changes nothing', () => {
    const once = foldCommits(initialSnapshot(ref), commits);
    expect(applyCommit(once, commits[2]!)).toBe(once);
    expect(applyCommit(once, commits[0]!)).toBe(once);
    const twice = foldCommits(initialSnapshot(ref), [...commits, ...commits, commits[1]!]);
    expect(twice).toEqual(once);
  });

  it('throws a gap error for a commit that skips events', () => {
    const first = applyCommit(initialSnapshot(ref), commits[0]!);
    const error = captureError(() => applyCommit(first, commits[2]!));
    expect(error).toBeInstanceOf(CommitOrderError);
    expect(error).toMatchObject({ code: 'gap', isRetryable: false, expectedFirstSeq: 2, actualFirstSeq: 4 });
    expect(() => applyCommit(initialSnapshot(ref), commits[1]!)).toThrow(CommitOrderError);
  });

  it('throws an overlap error for a later commit that repeats events', () => {
    const two = foldCommits(initialSnapshot(ref), commits.slice(0, 2));
    const replay = { ...commits[1]!, streamSeq: 999 };
    expect(captureError(() => applyCommit(two, replay))).toMatchObject({ code: 'overlap' });
  });

  it('refuses a commit of another conversation', () => {
    const other = { ...commits[0]!, conversation: 'c2' };
    expect(captureError(() => applyCommit(initialSnapshot(ref), other))).toMatchObject({ code: 'wrong_conversation' });
  });

  it('refuses a commit whose seqs do not match its events', () => {
    const broken: StoredCommit = { ...commits[1]!, firstSeq: 1, lastSeq: 3 };
    expect(captureError(() => applyCommit(initialSnapshot(ref), broken))).toMatchObject({ code: 'invalid_commit' });
  });
});

function commitAfter(snapshot: ConversationSnapshot, drafts: readonly EventDraft[]): StoredCommit {
  const [commit] = commitsOf(ref, [drafts]);
  const shift = snapshot.last_seq;
  return {
    ...commit!,
    streamSeq: snapshot.last_stream_seq + 1,
    firstSeq: commit!.firstSeq + shift,
    lastSeq: commit!.lastSeq + shift,
    events: commit!.events.map((event) => ({ ...event, seq: event.seq + shift })),
  };
}

function captureError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
