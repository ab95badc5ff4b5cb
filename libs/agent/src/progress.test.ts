import { draftEvent, type ActionEvent, type Event, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { ConversationProgress, type NextWork } from './progress.js';
import { conversationFixture, realRunCommits } from './test-support/conversation-fixture.js';

/** The decision by plain scans of the whole log: the definition ConversationProgress must match. */
function scannedNextWork(events: readonly Event[], alive: (runner: string) => boolean): NextWork {
  let status = 'idle';
  for (const event of events) if (event.type === 'state_change' && event.status !== undefined) status = event.status;
  if (status !== 'running') return { kind: 'rest' };
  const answered = new Set<string>();
  const startedBy = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'observation' || event.type === 'user_rejection') answered.add(event.tool_call_id);
    else if (event.type === 'agent_error' && event.tool_call_id !== undefined) answered.add(event.tool_call_id);
    else if (event.type === 'execution_started') for (const id of event.action_ids) startedBy.set(id, event.runner);
  }
  const pending = events.filter(
    (event): event is ActionEvent =>
      event.type === 'action' && event.input !== null && !answered.has(event.tool_call_id),
  );
  const notStarted = pending.filter((action) => !startedBy.has(action.id));
  const interrupted = pending.filter((action) => startedBy.has(action.id) && !alive(startedBy.get(action.id)!));
  const inProgress = pending.filter((action) => startedBy.has(action.id) && alive(startedBy.get(action.id)!));
  if (notStarted.length > 0 || interrupted.length > 0) return { kind: 'execute', actions: notStarted, interrupted };
  if (inProgress.length > 0) return { kind: 'in_progress', actions: inProgress };
  // the run ends when the last of these is a successful finish observation
  const decisive = events.findLast(
    (event) =>
      (event.type === 'message' && event.source === 'user') ||
      event.type === 'action' ||
      (event.type === 'state_change' && event.status === 'running') ||
      (event.type === 'observation' && event.tool_name === 'finish'),
  );
  // a spec with skills (the default) owes the workspace's context before the run goes on (no hooks in these runs)
  const spec = events.findLast((event) => event.type === 'agent_spec');
  const skills = spec?.type === 'agent_spec' ? (spec.spec['skills'] as { enabled?: boolean } | undefined) : undefined;
  const contextOwed =
    spec !== undefined && skills?.enabled !== false && !events.some((event) => event.type === 'workspace_context');
  const prepare: NextWork = {
    kind: 'prepare',
    needs: { context: true, sessionStart: false, prompts: [], stop: false, sessionEnd: false },
  };
  if (decisive?.type === 'observation' && !decisive.is_error) return contextOwed ? prepare : { kind: 'finish' };
  const lastCondensation = events.findLast(
    (event) => event.type === 'condensation' || event.type === 'condensation_request',
  );
  if (lastCondensation?.type === 'condensation_request') return { kind: 'condense' };
  return contextOwed ? prepare : { kind: 'step' };
}

const LIVENESS: Record<string, (runner: string) => boolean> = {
  'no runner alive': () => false,
  'every runner alive': () => true,
  'only runner-a alive': (runner) => runner === 'runner-a',
};

function expectSameAtEveryBoundary(commits: readonly (readonly Event[])[]): number {
  const incremental = new ConversationProgress();
  const events: Event[] = [];
  for (const commit of commits) {
    incremental.append(commit);
    events.push(...commit);
    expect(incremental.length).toBe(events.length);
    for (const [name, alive] of Object.entries(LIVENESS)) {
      const expected = scannedNextWork(events, alive);
      expect(
        incremental.nextWork({ runnerAlive: alive }),
        `${name}, after ${commit.map((event) => event.type).join(',')}`,
      ).toEqual(expected);
      expect(ConversationProgress.of(events).nextWork({ runnerAlive: alive })).toEqual(expected);
    }
  }
  return events.length;
}

describe('ConversationProgress', () => {
  it('decides like a scan of the whole log at every commit of real runs', async () => {
    await using fixture = await conversationFixture();
    let checked = 0;
    for (const commits of await realRunCommits(fixture)) checked += expectSameAtEveryBoundary(commits);
    expect(checked).toBeGreaterThan(40);
  });

  it('tracks starts by runner, interruptions, answers logged out of order, rejections and condensation requests', () => {
    const context = { tenant: 't', conversation: 'c', source: 'agent' as const, now: () => new Date(0) };
    let seq = 0;
    const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
    const action = (callId: string, input: unknown = { thought: callId }): Event =>
      event(
        draftEvent(context, 'action', {
          tool_name: 'think',
          tool_call_id: callId,
          input,
          summary: callId,
          llm_response_id: 'r',
          security_risk: 'low',
        } as never),
      );
    const running = event(draftEvent({ ...context, source: 'user' }, 'state_change', { status: 'running' }));
    const [a, b, c, d] = [action('a'), action('b'), action('c'), action('d', null)];
    const started = (runner: string, ...actions: Event[]): Event =>
      event(
        draftEvent({ ...context, source: 'environment' }, 'execution_started', {
          runner,
          action_ids: actions.map((x) => x.id),
        } as never),
      );
    const observation = (callId: string): Event =>
      event(
        draftEvent({ ...context, source: 'environment' }, 'observation', {
          tool_name: 'think',
          tool_call_id: callId,
          content: [{ type: 'text', text: 'ok' }],
          is_error: false,
        } as never),
      );
    const rejection = (callId: string): Event =>
      event(
        draftEvent({ ...context, source: 'user' }, 'user_rejection', { tool_call_id: callId, reason: 'no' } as never),
      );
    const early = observation('e'); // an answer logged before its action still answers it
    const e = action('e');
    const request = event(
      draftEvent({ ...context, source: 'system' }, 'condensation_request', { reason: 'large' } as never),
    );
    const condensation = event(
      draftEvent({ ...context, source: 'system' }, 'condensation', { forgotten_event_ids: [] }),
    );
    const again = event(
      draftEvent({ ...context, source: 'system' }, 'condensation_request', { reason: 'large again' } as never),
    );
    expectSameAtEveryBoundary([
      [running],
      [a, b, c, d],
      [started('runner-a', a), started('runner-b', b)],
      [early, e],
      [observation('a')],
      [rejection('c')],
      [observation('b')],
      [request],
      [condensation],
      [again, condensation],
    ]);
  });

  it('owes the end of the run after a successful finish call, and a step again after a failed one, a user message or a new run', () => {
    const context = { tenant: 't', conversation: 'c', source: 'agent' as const, now: () => new Date(0) };
    let seq = 0;
    const event = (draft: EventDraft): Event => ({ ...draft, seq: (seq += 1) }) as Event;
    const running = (): Event =>
      event(draftEvent({ ...context, source: 'user' }, 'state_change', { status: 'running' }));
    const finish = (callId: string): Event =>
      event(
        draftEvent(context, 'action', {
          tool_name: 'finish',
          tool_call_id: callId,
          input: { message: 'done' },
          summary: 'finish',
          llm_response_id: 'r',
          security_risk: 'low',
        } as never),
      );
    const finished = (callId: string, isError = false): Event =>
      event(
        draftEvent({ ...context, source: 'environment' }, 'observation', {
          tool_name: 'finish',
          tool_call_id: callId,
          content: [{ type: 'text', text: 'done' }],
          is_error: isError,
        } as never),
      );
    const message = (): Event =>
      event(
        draftEvent({ ...context, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'one more thing' }],
        } as never),
      );
    const commits = [
      [running()],
      [finish('f1')],
      [finished('f1', true)],
      [finish('f2')],
      [finished('f2')],
      [message()],
      [finish('f3')],
      [finished('f3')],
      [running()],
      [finish('f4')],
      [finished('f4')],
    ];
    expectSameAtEveryBoundary(commits);
    const kinds = commits.map(
      (_, index) => ConversationProgress.of(commits.slice(0, index + 1).flat()).nextWork().kind,
    );
    expect(kinds).toEqual([
      'step',
      'execute',
      'step',
      'execute',
      'finish',
      'step',
      'execute',
      'finish',
      'step',
      'execute',
      'finish',
    ]);
    // a checkpoint carries it
    const progress = ConversationProgress.of(commits.flat());
    expect(ConversationProgress.resume(progress.checkpoint()).nextWork()).toEqual({ kind: 'finish' });
  });
});
