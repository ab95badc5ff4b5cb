import {
  draftEvent,
  type ActionEvent,
  type ConversationStatus,
  type DraftContext,
  type EventDraft,
} from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { AgentSpec, SpecRead } from './agent-spec.js';
import { childConversationId, childSpec } from './child-spec.js';
import { DEFAULT_MAX_SUB_AGENT_DEPTH, DEFAULT_MAX_SUB_AGENTS, type SubAgentDefinition } from './sub-agents.js';
import { TaskInput } from './task-tool.js';

/** How much of a sub-agent's final response its parent's observation holds (the rest is in the child's log). */
export const SUBAGENT_ANSWER_CHARS = 30_000;

/** Where a child conversation stands, as its delegator reads it from the child's log. */
export type ChildState =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly status: ConversationStatus;
      readonly stoppedBy?: 'pause' | 'interrupt' | undefined;
      readonly answer?: string | undefined;
      readonly error?: { readonly code: string; readonly detail: string } | undefined;
    };

/** Statuses a child does not leave by itself: its run is over (a user may take it up again, its parent no longer waits). */
const OVER: readonly ConversationStatus[] = ['finished', 'error', 'stuck', 'idle'];

/** A child the parent waits for has come to rest for good: its run is over, or its log is gone (deleted). */
export function childDone(child: ChildState): boolean {
  return !child.exists || OVER.includes(child.status);
}

/** A `task` call accepted: the sub-agent it names, what it asked, and the child to start for it. */
export type AcceptedDelegation = {
  readonly action: ActionEvent;
  readonly agent: SubAgentDefinition;
  readonly input: TaskInput;
  readonly child: string;
};

export type DelegationPlan = {
  readonly accepted: readonly AcceptedDelegation[];
  readonly refused: readonly EventDraft[];
};

export type PlanInput = {
  readonly ref: ConversationRef;
  /** The calls to start, in log order (`nextWork` `delegate`). */
  readonly actions: readonly ActionEvent[];
  /** The spec in force (undefined: the log has none). */
  readonly spec: SpecRead | undefined;
  /** How deep this conversation is (0 for one a user started). */
  readonly depth: number;
  /** Its children at work already (started, unanswered). */
  readonly atWork: number;
};

/**
 * Which of a conversation's `task` calls get a child, decided from its log alone: the spec in
 * force must have the sub-agent, the conversation's depth must leave room for one more level
 * (`limits.maxSubAgentDepth`), and no more than `limits.maxSubAgents` children may work at once.
 * A call refused is answered by an agent_error the model reads, saying why and what to do.
 */
export function planDelegations(input: PlanInput): DelegationPlan {
  const { ref, spec } = input;
  const refuse = (action: ActionEvent, error: string): EventDraft =>
    draftEvent({ ...ref, source: 'environment', parent: action.id }, 'agent_error', {
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      action_id: action.id,
      error,
    });
  if (spec === undefined || !spec.ok) {
    const why = spec === undefined ? 'this conversation has no agent spec in its log' : spec.reason;
    return {
      accepted: [],
      refused: input.actions.map((action) => refuse(action, `No sub-agent can be started: ${why}.`)),
    };
  }
  const { maxSubAgents = DEFAULT_MAX_SUB_AGENTS, maxSubAgentDepth = DEFAULT_MAX_SUB_AGENT_DEPTH } = spec.spec.limits;
  const accepted: AcceptedDelegation[] = [];
  const refused: EventDraft[] = [];
  for (const action of input.actions) {
    const parsed = TaskInput.safeParse(action.input);
    const agent = parsed.success
      ? spec.spec.subAgents.find((candidate) => candidate.name === parsed.data.agent)
      : undefined;
    if (!parsed.success || !agent) {
      const names = spec.spec.subAgents.map((candidate) => candidate.name).join(', ') || 'none';
      refused.push(
        refuse(
          action,
          parsed.success
            ? `There is no sub-agent "${parsed.data.agent}" in this conversation's spec (the sub-agents: ${names}).`
            : `The task call's arguments are not a task: ${parsed.error.issues[0]?.message ?? 'invalid'}.`,
        ),
      );
    } else if (input.depth + 1 > maxSubAgentDepth) {
      refused.push(
        refuse(
          action,
          `Sub-agents may be nested ${maxSubAgentDepth} level${maxSubAgentDepth === 1 ? '' : 's'} deep here, and this conversation is at level ${input.depth}: it cannot start another. Do the task yourself.`,
        ),
      );
    } else if (input.atWork + accepted.length >= maxSubAgents) {
      refused.push(
        refuse(
          action,
          `At most ${maxSubAgents} sub-agents may work at once for this conversation: this call was not started. Call it again once the others have answered, or do the task yourself.`,
        ),
      );
    } else {
      accepted.push({ action, agent, input: parsed.data, child: childConversationId(ref, action.id) });
    }
  }
  return { accepted, refused };
}

/** The parent's record of the children it starts: one `subagent_started` per accepted call. */
export function startedDrafts(ref: ConversationRef, accepted: readonly AcceptedDelegation[]): EventDraft[] {
  return accepted.map(({ action, agent, child }) =>
    draftEvent({ ...ref, source: 'system', parent: action.id }, 'subagent_started', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      agent: agent.name,
      child,
    }),
  );
}

export type ChildInput = {
  readonly parent: ConversationRef;
  readonly parentSpec: AgentSpec;
  /** The parent's depth (0 for a conversation a user started) and the conversation whose workspace it works in. */
  readonly parentDepth: number;
  readonly parentWorkspace: string;
  readonly delegation: AcceptedDelegation;
  readonly now?: () => Date;
};

/**
 * A child conversation's first commit: created (with a title naming its sub-agent and task), its
 * spec (`childSpec`), whose call it answers (`subagent_task`), the task as its user's message (in
 * the child, the delegating agent is its user), and its run started.
 */
export function childDrafts(input: ChildInput): EventDraft[] {
  const { delegation, parent } = input;
  const ref = { tenant: parent.tenant, conversation: delegation.child };
  const context: DraftContext = { ...ref, source: 'system', ...(input.now ? { now: input.now } : {}) };
  const label =
    delegation.input.description ??
    delegation.input.prompt.split('\n').find((line) => line.trim() !== '') ??
    delegation.input.prompt;
  const title = `${delegation.agent.name}: ${label.trim()}`;
  return [
    draftEvent(context, 'state_change', {
      status: 'idle',
      title: title.length > 200 ? `${title.slice(0, 199)}…` : title,
      reason: `created for a task of conversation ${parent.conversation}`,
    }),
    draftEvent(context, 'agent_spec', {
      spec: childSpec(input.parentSpec, delegation.agent),
      reason: `the sub-agent "${delegation.agent.name}" of conversation ${parent.conversation}`,
    }),
    draftEvent(context, 'subagent_task', {
      parent_call: {
        conversation: parent.conversation,
        action_id: delegation.action.id,
        tool_call_id: delegation.action.tool_call_id,
      },
      agent: delegation.agent.name,
      depth: input.parentDepth + 1,
      workspace: delegation.agent.workspace === 'own' ? delegation.child : input.parentWorkspace,
    }),
    draftEvent({ ...context, source: 'user' }, 'message', {
      role: 'user',
      content: [{ type: 'text', text: delegation.input.prompt }],
    }),
    draftEvent(context, 'state_change', { status: 'running', reason: 'the sub-agent starts on its task' }),
  ];
}

/** A pending call and the child working on it. */
export type WaitedChild = {
  readonly action: ActionEvent;
  readonly agent: string;
  readonly child: string;
  readonly state: ChildState;
};

/**
 * The calls' answers, once every child the parent waits for is done: one observation per call, in
 * call order, in one commit (the parent's next step reads them together). A finished child's
 * answer is its final response; any other end is an error observation saying how it stopped and
 * what it last said. Undefined while a child still works.
 */
export function answerDrafts(ref: ConversationRef, waited: readonly WaitedChild[]): EventDraft[] | undefined {
  if (waited.length === 0 || !waited.every((entry) => childDone(entry.state))) return undefined;
  return waited.map(({ action, agent, child, state }) => {
    const text = answerText(agent, child, state);
    return draftEvent({ ...ref, source: 'environment', parent: action.id }, 'observation', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      content: [{ type: 'text', text }],
      is_error: !(state.exists && state.status === 'finished'),
      details: { child, status: state.exists ? state.status : 'deleted' },
    });
  });
}

function answerText(agent: string, child: string, state: ChildState): string {
  if (!state.exists) return `The sub-agent "${agent}" did not answer: its conversation ${child} was deleted.`;
  const said = state.answer === undefined || state.answer.trim() === '' ? undefined : bounded(state.answer, child);
  if (state.status === 'finished')
    return said ?? `The sub-agent "${agent}" finished without a final message (conversation ${child}).`;
  const why = state.error ? ` (${state.error.code}: ${state.error.detail})` : '';
  return `The sub-agent "${agent}" stopped without finishing: its conversation ${child} ended ${state.status}${why}.${said ? `\nIts last response:\n${said}` : ''}`;
}

function bounded(text: string, child: string): string {
  if (text.length <= SUBAGENT_ANSWER_CHARS) return text;
  return `${text.slice(0, SUBAGENT_ANSWER_CHARS)}\n[The sub-agent's answer was cut at ${SUBAGENT_ANSWER_CHARS} of its ${text.length} characters; the whole of it is in conversation ${child}.]`;
}

/** What a child's run owes its parent's: to run while the parent runs, to stop (as the parent was stopped) while it is paused. */
export type Steering = { readonly drafts: EventDraft[]; readonly interrupt: boolean };

/**
 * A child's run follows its parent's while the parent waits for it: a paused or interrupted
 * parent pauses or interrupts a running child, and a parent that runs again resumes a paused one.
 * Undefined when the child is where it should be (or is not there to move: waiting for a
 * confirmation, done).
 */
export function steerChild(
  child: ConversationRef,
  parent: { readonly status: ConversationStatus; readonly stoppedBy: 'pause' | 'interrupt' | undefined },
  state: ChildState,
): Steering | undefined {
  if (!state.exists) return undefined;
  const system = { ...child, source: 'system' as const };
  if (parent.status === 'running' && state.status === 'paused') {
    return {
      drafts: [draftEvent(system, 'state_change', { status: 'running', reason: 'its parent conversation runs again' })],
      interrupt: false,
    };
  }
  if (parent.status === 'paused' && state.status === 'running') {
    const interrupt = parent.stoppedBy === 'interrupt';
    const reason = `its parent conversation was ${interrupt ? 'interrupted' : 'paused'}`;
    return {
      drafts: [
        draftEvent(system, interrupt ? 'interrupt' : 'pause', { reason }),
        draftEvent(system, 'state_change', { status: 'paused', reason }),
      ],
      interrupt,
    };
  }
  return undefined;
}
