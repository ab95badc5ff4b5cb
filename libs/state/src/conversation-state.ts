import { ConversationStatus, EventId, type Event } from '@flotilla/events';
import { z } from 'zod';

/** Answers held for actions not in the log yet (an answer logged before its action); the oldest go first. */
export const MAX_EARLY_ANSWERS = 64;

/** An action without a result yet: what a command or a service needs of it, without its input. */
export const PendingAction = z.strictObject({
  id: EventId,
  tool_call_id: z.string().min(1),
  tool_name: z.string().min(1),
  /** False for a call that could not be understood (input null): it is answered by an error, never run. */
  executable: z.boolean(),
  /**
   * The runner that recorded its start (execution_started); for a delegation (a `task` call,
   * answered by a sub-agent's conversation), the child conversation started for it
   * (subagent_started); null before.
   */
  started_by: z.string().min(1).nullable(),
});
export type PendingAction = z.infer<typeof PendingAction>;

/**
 * What a conversation owes and where it stands, small and bounded whatever its history: the
 * status, the actions waiting for a result (in log order), and whether a condensation is
 * requested. Folded event by event (`foldState`), by the snapshot (which holds these fields) and
 * by every service that keeps a conversation in memory (`ConversationProgress`), so commands
 * and services decide from the same state. Folding a log whole or commit by commit gives the
 * same state.
 *
 * An answer (observation, user_rejection, agent_error with a tool_call_id) answers the actions
 * before it that wait with its tool call id. An answer that answers nothing is held (at most
 * MAX_EARLY_ANSWERS) and answers the next action with its tool call id: an answer logged before
 * its action still answers it.
 */
export type ConversationState = {
  status: ConversationStatus;
  pending_actions: PendingAction[];
  /** Tool call ids answered before any action with them was logged, oldest first. */
  early_answers: string[];
  /** A condensation_request not yet answered by a condensation. */
  condensation_requested: boolean;
};

export const ConversationStateFields = {
  status: ConversationStatus,
  pending_actions: z.array(PendingAction),
  early_answers: z.array(z.string().min(1)).max(MAX_EARLY_ANSWERS),
  condensation_requested: z.boolean(),
} as const;

export function initialState(): ConversationState {
  return { status: 'idle', pending_actions: [], early_answers: [], condensation_requested: false };
}

/** The state after `events` (a whole log, from its first event). */
export function conversationState(events: Iterable<Event>): ConversationState {
  const state = initialState();
  for (const event of events) foldState(state, event);
  return state;
}

/** A copy that `foldState` may change without changing `state`. */
export function copyState<T extends ConversationState>(state: T): T {
  return {
    ...state,
    pending_actions: state.pending_actions.map((action) => ({ ...action })),
    early_answers: [...state.early_answers],
  };
}

/** Folds one event into `state` (changed in place). */
export function foldState(state: ConversationState, event: Event): void {
  switch (event.type) {
    case 'state_change':
      if (event.status !== undefined) state.status = event.status;
      return;
    case 'action': {
      const early = state.early_answers.indexOf(event.tool_call_id);
      if (early >= 0) {
        state.early_answers.splice(early, 1);
        return;
      }
      state.pending_actions.push({
        id: event.id,
        tool_call_id: event.tool_call_id,
        tool_name: event.tool_name,
        executable: event.input !== null,
        started_by: null,
      });
      return;
    }
    case 'execution_started':
      for (const action of state.pending_actions)
        if (action.executable && event.action_ids.includes(action.id)) action.started_by = event.runner;
      return;
    case 'subagent_started':
      for (const action of state.pending_actions)
        if (action.executable && action.id === event.action_id) action.started_by = event.child;
      return;
    case 'observation':
    case 'user_rejection':
      answer(state, event.tool_call_id);
      return;
    case 'agent_error':
      if (event.tool_call_id !== undefined) answer(state, event.tool_call_id);
      return;
    case 'condensation':
      state.condensation_requested = false;
      return;
    case 'condensation_request':
      state.condensation_requested = true;
      return;
    default:
      return;
  }
}

function answer(state: ConversationState, toolCallId: string): void {
  const before = state.pending_actions.length;
  if (before > 0) state.pending_actions = state.pending_actions.filter((action) => action.tool_call_id !== toolCallId);
  if (state.pending_actions.length < before) return;
  if (state.early_answers.includes(toolCallId)) return;
  state.early_answers.push(toolCallId);
  if (state.early_answers.length > MAX_EARLY_ANSWERS) state.early_answers.shift();
}

/** Executable actions waiting for a result that no runner started: what a confirmation approves or rejects. */
export function notStartedActions(state: Pick<ConversationState, 'pending_actions'>): PendingAction[] {
  return state.pending_actions.filter((action) => action.executable && action.started_by === null);
}
