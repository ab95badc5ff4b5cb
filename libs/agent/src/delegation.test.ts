import { draftEvent, type ActionEvent, type Event, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from './agent-config.js';
import { readAgentSpec, type AgentSpec } from './agent-spec.js';
import { childConversationId } from './child-spec.js';
import {
  answerDrafts,
  childDrafts,
  planDelegations,
  startedDrafts,
  steerChild,
  SUBAGENT_ANSWER_CHARS,
  type ChildState,
} from './delegation.js';
import { DelegationFold } from './delegation-fold.js';
import { ConversationProgress } from './progress.js';
import { AgentCatalog } from './spec-catalog.js';

const ref = { tenant: 'acme', conversation: 'lead' };
const defaults = parseAgentConfig({
  llm: { provider: 'openai-chat', model: 'house-model' },
  tools: ['terminal', 'finish'],
});
const definition = (name: string, extra = ''): string =>
  `---\nname: ${name}\ndescription: The ${name}.\ntools: [terminal, finish]\n${extra}---\nYou are the ${name}.`;
const catalog = new AgentCatalog(defaults, {
  subAgents: [definition('researcher'), definition('builder', 'workspace: own\n')],
  limits: { maxSubAgents: 2, maxSubAgentDepth: 1 },
});
const spec: AgentSpec = catalog.resolve({
  spec: { tools: ['terminal', 'task', 'finish'], subAgents: ['researcher', 'builder'], skills: { enabled: false } },
}).spec;

/** The drafts as a log holds them, seqs from `from` on. */
function placed(drafts: readonly EventDraft[], from = 1): Event[] {
  return drafts.map((draft, index) => ({ ...draft, seq: from + index }) as Event);
}

function log(): { events: Event[]; add(drafts: readonly EventDraft[]): Event[] } {
  const events: Event[] = [];
  return {
    events,
    add(drafts) {
      const added = placed(drafts, events.length + 1);
      events.push(...added);
      return added;
    },
  };
}

const agent = { ...ref, source: 'agent' as const };
const system = { ...ref, source: 'system' as const };
const environment = { ...ref, source: 'environment' as const };
const task = (id: string, agentName: string, prompt: string): EventDraft =>
  draftEvent(agent, 'action', {
    tool_call_id: id,
    tool_name: 'task',
    arguments: '{}',
    input: { agent: agentName, prompt },
    thought: [],
    response_id: 'r1',
    security_risk: 'low',
  });

function started(): { events: Event[]; tasks: ActionEvent[]; add(drafts: readonly EventDraft[]): Event[] } {
  const conversation = log();
  conversation.add([
    draftEvent(system, 'agent_spec', {
      spec: JSON.parse(JSON.stringify(spec)) as Record<string, unknown> & { version: number },
      reason: 'test',
    }),
    draftEvent(system, 'state_change', { status: 'running' }),
  ]);
  const terminal = draftEvent(agent, 'action', {
    tool_call_id: 'call_t',
    tool_name: 'terminal',
    arguments: '{}',
    input: { command: 'ls' },
    thought: [],
    response_id: 'r1',
    security_risk: 'low',
  });
  const added = conversation.add([
    terminal,
    task('call_a', 'researcher', 'Read the code.'),
    task('call_b', 'builder', 'Build it.\nThen test it.'),
  ]);
  return {
    ...conversation,
    tasks: added.filter((event): event is ActionEvent => event.type === 'action' && event.tool_name === 'task'),
  };
}

describe('what a parent with task calls owes', () => {
  it('runs the batch’s tools first, then starts its children, then waits for them; only then is a step due', () => {
    const parent = started();
    const progress = ConversationProgress.of(parent.events);
    expect(progress.nextWork()).toMatchObject({ kind: 'execute', actions: [{ tool_name: 'terminal' }] });
    const terminal = parent.events.find(
      (event) => event.type === 'action' && event.tool_name === 'terminal',
    ) as ActionEvent;
    progress.append(
      parent.add([draftEvent(system, 'execution_started', { action_ids: [terminal.id], runner: 'runner-1' })]),
    );
    expect(progress.nextWork({ runnerAlive: () => true })).toMatchObject({ kind: 'in_progress' });
    progress.append(
      parent.add([
        draftEvent(environment, 'observation', {
          action_id: terminal.id,
          tool_call_id: 'call_t',
          tool_name: 'terminal',
          content: [],
          is_error: false,
        }),
      ]),
    );
    expect(progress.nextWork()).toEqual({ kind: 'delegate', actions: parent.tasks });
    // a tool runner has nothing of a delegation's: no runner to ask about, nothing pending for it
    expect(progress.pending().notStarted).toEqual([]);
    const plan = planDelegations({
      ref,
      actions: parent.tasks,
      spec: readAgentSpec(parent.events[0] as never),
      depth: 0,
      atWork: 0,
    });
    progress.append(parent.add(startedDrafts(ref, plan.accepted)));
    expect(progress.nextWork()).toEqual({ kind: 'delegated', actions: parent.tasks });
    expect(progress.startedByRunners()).toEqual(new Set());
    expect(progress.delegations().map((delegation) => delegation.child)).toEqual(
      plan.accepted.map((accepted) => accepted.child),
    );
    const answers = answerDrafts(
      ref,
      plan.accepted.map((accepted) => ({
        action: accepted.action,
        agent: accepted.agent.name,
        child: accepted.child,
        state: { exists: true, status: 'finished', answer: 'ok' },
      })),
    );
    progress.append(parent.add(answers!));
    expect(progress.nextWork()).toEqual({ kind: 'step' });
    // folded whole or commit by commit: the same
    expect(ConversationProgress.of(parent.events).nextWork()).toEqual({ kind: 'step' });
  });

  it('while the parent is paused, nobody owes anything: its children follow it (steerChild)', () => {
    const parent = started();
    parent.add([
      draftEvent({ ...ref, source: 'user' }, 'interrupt', {}),
      draftEvent(system, 'state_change', { status: 'paused' }),
    ]);
    expect(ConversationProgress.of(parent.events).nextWork()).toEqual({ kind: 'rest' });
    const fold = DelegationFold.of(parent.events);
    expect([fold.status, fold.stoppedBy]).toEqual(['paused', 'interrupt']);
  });
});

describe('planDelegations', () => {
  const parent = started();
  const read = readAgentSpec(parent.events[0] as never);

  it('gives each accepted call a child named after the call, and refuses what the spec and its limits do not allow, saying why', () => {
    const plan = planDelegations({ ref, actions: parent.tasks, spec: read, depth: 0, atWork: 0 });
    expect(plan.accepted.map((accepted) => [accepted.agent.name, accepted.child])).toEqual([
      ['researcher', childConversationId(ref, parent.tasks[0]!.id)],
      ['builder', childConversationId(ref, parent.tasks[1]!.id)],
    ]);
    expect(plan.refused).toEqual([]);
    // at most maxSubAgents (2) at work at once
    const crowded = planDelegations({ ref, actions: parent.tasks, spec: read, depth: 0, atWork: 1 });
    expect(crowded.accepted).toHaveLength(1);
    expect(crowded.refused).toMatchObject([
      {
        type: 'agent_error',
        tool_call_id: 'call_b',
        action_id: parent.tasks[1]!.id,
        error: expect.stringContaining('At most 2 sub-agents'),
      },
    ]);
    // maxSubAgentDepth 1: a sub-agent cannot start another
    expect(planDelegations({ ref, actions: parent.tasks, spec: read, depth: 1, atWork: 0 }).refused).toMatchObject([
      { error: expect.stringContaining('nested 1 level deep') },
      { error: expect.stringContaining('nested 1 level deep') },
    ]);
    // the spec in force decides: a sub-agent it does not have, or no spec at all
    const other = task('call_c', 'painter', 'Paint.');
    expect(
      planDelegations({ ref, actions: placed([other], 99) as ActionEvent[], spec: read, depth: 0, atWork: 0 }).refused,
    ).toMatchObject([{ error: expect.stringContaining('no sub-agent "painter"') }]);
    expect(planDelegations({ ref, actions: parent.tasks, spec: undefined, depth: 0, atWork: 0 }).refused).toHaveLength(
      2,
    );
  });

  it("makes a child's first commit from the parent's spec: titled, its spec, its call, its task as the user's message, running", () => {
    const [researcher, builder] = planDelegations({
      ref,
      actions: parent.tasks,
      spec: read,
      depth: 0,
      atWork: 0,
    }).accepted;
    const drafts = childDrafts({
      parent: ref,
      parentSpec: spec,
      parentDepth: 0,
      parentWorkspace: 'lead',
      delegation: researcher!,
    });
    expect(drafts.map((draft) => draft.type)).toEqual([
      'state_change',
      'agent_spec',
      'subagent_task',
      'message',
      'state_change',
    ]);
    expect(drafts.every((draft) => draft.conversation === researcher!.child && draft.tenant === 'acme')).toBe(true);
    expect(drafts[0]).toMatchObject({ status: 'idle', title: 'researcher: Read the code.' });
    expect(drafts[1]).toMatchObject({
      spec: { tools: ['terminal', 'finish'], prompt: { instructions: 'You are the researcher.' } },
    });
    expect(drafts[2]).toMatchObject({
      parent_call: { conversation: 'lead', action_id: researcher!.action.id, tool_call_id: 'call_a' },
      agent: 'researcher',
      depth: 1,
      workspace: 'lead',
    });
    expect(drafts[3]).toMatchObject({
      source: 'user',
      role: 'user',
      content: [{ type: 'text', text: 'Read the code.' }],
    });
    expect(drafts[4]).toMatchObject({ status: 'running' });
    // a sub-agent of its own workspace works in its own; a title is the task's first line
    const own = childDrafts({
      parent: ref,
      parentSpec: spec,
      parentDepth: 0,
      parentWorkspace: 'lead',
      delegation: builder!,
    });
    expect(own[0]).toMatchObject({ title: 'builder: Build it.' });
    expect(own[2]).toMatchObject({ workspace: builder!.child });
  });
});

describe('answerDrafts', () => {
  const parent = started();
  const [first, second] = parent.tasks;
  const waited = (a: ChildState, b: ChildState) => [
    { action: first!, agent: 'researcher', child: 'sub-a', state: a },
    { action: second!, agent: 'builder', child: 'sub-b', state: b },
  ];

  it('answers nothing while a child works, then every call at once, in call order', () => {
    expect(
      answerDrafts(ref, waited({ exists: true, status: 'finished', answer: 'A' }, { exists: true, status: 'running' })),
    ).toBeUndefined();
    expect(
      answerDrafts(ref, waited({ exists: true, status: 'finished', answer: 'A' }, { exists: true, status: 'paused' })),
    ).toBeUndefined();
    expect(
      answerDrafts(
        ref,
        waited({ exists: true, status: 'finished', answer: 'A' }, { exists: true, status: 'waiting_for_confirmation' }),
      ),
    ).toBeUndefined();
    const answers = answerDrafts(
      ref,
      waited({ exists: true, status: 'finished', answer: 'A' }, { exists: true, status: 'finished', answer: 'B' }),
    );
    expect(answers).toMatchObject([
      {
        type: 'observation',
        action_id: first!.id,
        tool_call_id: 'call_a',
        tool_name: 'task',
        content: [{ type: 'text', text: 'A' }],
        is_error: false,
        details: { child: 'sub-a', status: 'finished' },
      },
      {
        type: 'observation',
        action_id: second!.id,
        tool_call_id: 'call_b',
        content: [{ type: 'text', text: 'B' }],
        is_error: false,
      },
    ]);
  });

  it('says how a child that did not finish ended, and bounds a long answer', () => {
    const answers = answerDrafts(
      ref,
      waited(
        {
          exists: true,
          status: 'error',
          error: { code: 'max_iterations', detail: 'The run reached its limit.' },
          answer: 'half',
        },
        { exists: false },
      ),
    )!;
    expect(answers[0]).toMatchObject({
      is_error: true,
      details: { status: 'error' },
      content: [
        {
          text: expect.stringMatching(
            /stopped without finishing: its conversation sub-a ended error \(max_iterations: The run reached its limit\.\)\.\nIts last response:\nhalf$/,
          ),
        },
      ],
    });
    expect(answers[1]).toMatchObject({
      is_error: true,
      details: { status: 'deleted' },
      content: [{ text: expect.stringContaining('was deleted') }],
    });
    const long = answerDrafts(
      ref,
      waited(
        { exists: true, status: 'finished', answer: 'x'.repeat(SUBAGENT_ANSWER_CHARS + 10) },
        { exists: true, status: 'idle' },
      ),
    )!;
    const text = (long[0] as { content: { text: string }[] }).content[0]!.text;
    expect(text.length).toBeLessThan(SUBAGENT_ANSWER_CHARS + 200);
    expect(text).toContain('the whole of it is in conversation sub-a');
  });
});

describe('steerChild', () => {
  const child = { tenant: 'acme', conversation: 'sub-a' };
  it('pauses or interrupts a running child of a stopped parent, resumes a paused child of a running one, and leaves the rest', () => {
    expect(
      steerChild(child, { status: 'paused', stoppedBy: 'interrupt' }, { exists: true, status: 'running' }),
    ).toMatchObject({
      interrupt: true,
      drafts: [
        { type: 'interrupt', conversation: 'sub-a' },
        { type: 'state_change', status: 'paused' },
      ],
    });
    expect(
      steerChild(child, { status: 'paused', stoppedBy: 'pause' }, { exists: true, status: 'running' }),
    ).toMatchObject({ interrupt: false, drafts: [{ type: 'pause' }, { type: 'state_change', status: 'paused' }] });
    expect(
      steerChild(child, { status: 'running', stoppedBy: undefined }, { exists: true, status: 'paused' }),
    ).toMatchObject({ drafts: [{ type: 'state_change', status: 'running' }] });
    expect(
      steerChild(child, { status: 'running', stoppedBy: undefined }, { exists: true, status: 'running' }),
    ).toBeUndefined();
    expect(
      steerChild(child, { status: 'paused', stoppedBy: 'pause' }, { exists: true, status: 'waiting_for_confirmation' }),
    ).toBeUndefined();
    expect(steerChild(child, { status: 'paused', stoppedBy: 'pause' }, { exists: false })).toBeUndefined();
  });
});

describe('DelegationFold', () => {
  it("knows a child's call, depth and workspace, and where its run stands: its status, what stopped it, its final response", () => {
    const [researcher] = planDelegations({
      ref,
      actions: started().tasks,
      spec: readAgentSpec(started().events[0] as never),
      depth: 0,
      atWork: 0,
    }).accepted;
    const events = placed(
      childDrafts({ parent: ref, parentSpec: spec, parentDepth: 0, parentWorkspace: 'lead', delegation: researcher! }),
    );
    const fold = DelegationFold.of(events);
    expect([
      fold.task?.parent_call.conversation,
      fold.depth,
      fold.workspace(researcher!.child),
      fold.status,
      fold.answer,
    ]).toEqual(['lead', 1, 'lead', 'running', undefined]);
    const childRef = { tenant: 'acme', conversation: researcher!.child };
    fold.append(
      placed(
        [
          draftEvent({ ...childRef, source: 'agent' }, 'message', {
            role: 'assistant',
            content: [{ type: 'text', text: 'Found it.' }],
          }),
          draftEvent({ ...childRef, source: 'system' }, 'state_change', { status: 'finished' }),
        ],
        6,
      ),
    );
    expect([fold.status, fold.answer]).toEqual(['finished', 'Found it.']);
    fold.append(
      placed(
        [
          draftEvent({ ...childRef, source: 'user' }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'More?' }],
          }),
        ],
        8,
      ),
    );
    expect(fold.answer).toBeUndefined();
  });
});
