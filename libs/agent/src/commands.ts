import {
  draftEvent,
  type ConversationStatus,
  type ContentPart,
  type DraftContext,
  type EventDraft,
  type ImageContent,
} from '@flotilla/events';
import { notStartedActions, type ConversationState } from '@flotilla/state';

/**
 * What a command decides from: the conversation's status and the actions waiting for a result,
 * as the snapshot holds them and as `conversationState(events)` folds them (libs/state), so a
 * command costs the same whatever the history. The gateway reads it from the KV snapshot plus the
 * commits after it; an in-process conversation folds the events it holds.
 */
export type CommandState = Pick<ConversationState, 'status' | 'pending_actions'>;

/**
 * The status machine, as the drafts a command appends (decided from the state at the log's tail,
 * appended with optimistic concurrency by whoever issues the command: gateway, CLI, in-process
 * conversation).
 *
 *   idle ──run──▶ running ──▶ finished | error | stuck | waiting_for_confirmation
 *   running ──pause/interrupt──▶ paused ──run──▶ running
 *   finished | stuck ──message──▶ idle           error ──run──▶ running
 *   waiting_for_confirmation ──approve (run)──▶ running, ──reject──▶ idle
 */
export class CommandRefused extends Error {
  override readonly name = 'CommandRefused';
  constructor(
    readonly code: 'already_running' | 'nothing_pending' | 'not_waiting',
    message: string,
    readonly status: ConversationStatus,
  ) {
    super(message);
  }
}

type Context = Omit<DraftContext, 'source'>;

const statusChange = (context: Context, status: ConversationStatus, reason: string): EventDraft =>
  draftEvent({ ...context, source: 'system' }, 'state_change', { status, reason });

/**
 * A user message (its text, then its `images`: stored ones, whose bytes are in the images
 * bucket; an empty text with images is left out); finished/stuck go back to idle, and `run`
 * starts (or keeps) the run.
 */
export function messageCommand(
  state: CommandState,
  context: Context,
  text: string,
  options: { run?: boolean; images?: readonly ImageContent[] } = {},
): EventDraft[] {
  const status = state.status;
  const images = options.images ?? [];
  const content: ContentPart[] = [
    ...(text === '' && images.length > 0 ? [] : [{ type: 'text' as const, text }]),
    ...images,
  ];
  const drafts: EventDraft[] = [draftEvent({ ...context, source: 'user' }, 'message', { role: 'user', content })];
  if (options.run && status !== 'running' && status !== 'waiting_for_confirmation')
    drafts.push(statusChange(context, 'running', 'message with run'));
  else if (status === 'finished' || status === 'stuck') drafts.push(statusChange(context, 'idle', 'new user message'));
  return drafts;
}

/**
 * Start or resume the run. On waiting_for_confirmation this approves the pending actions.
 * Refused with `already_running` on a running conversation unless `resume` (an in-process
 * loop picking up where a crashed one stopped).
 */
export function runCommand(state: CommandState, context: Context, options: { resume?: boolean } = {}): EventDraft[] {
  const status = state.status;
  if (status === 'running') {
    if (options.resume) return [];
    throw new CommandRefused('already_running', 'The conversation is already running.', status);
  }
  if (status === 'waiting_for_confirmation') return approveCommand(state, context);
  return [statusChange(context, 'running', 'run requested')];
}

/** Pause after the current step. Idempotent; never overrides waiting_for_confirmation. */
export function pauseCommand(state: CommandState, context: Context, reason?: string): EventDraft[] {
  if (state.status !== 'running') return [];
  return [
    draftEvent({ ...context, source: 'user' }, 'pause', reason === undefined ? {} : { reason }),
    statusChange(context, 'paused', 'paused by the user'),
  ];
}

/**
 * Cancel the in-flight LLM call or tool now and pause. After appending, broadcast the interrupt
 * (core NATS) so whichever process holds the work aborts it; a result that races is discarded
 * by optimistic concurrency (the tail moved).
 */
export function interruptCommand(state: CommandState, context: Context, reason?: string): EventDraft[] {
  if (state.status !== 'running') return [];
  return [
    draftEvent({ ...context, source: 'user' }, 'interrupt', reason === undefined ? {} : { reason }),
    statusChange(context, 'paused', 'interrupted by the user'),
  ];
}

/** Approve the actions awaiting confirmation, and run. */
export function approveCommand(state: CommandState, context: Context): EventDraft[] {
  const status = state.status;
  if (status !== 'waiting_for_confirmation')
    throw new CommandRefused('not_waiting', `Nothing awaits confirmation (status ${status}).`, status);
  const pending = notStartedActions(state).map((action) => action.id);
  const drafts: EventDraft[] = [];
  if (pending.length > 0) drafts.push(draftEvent({ ...context, source: 'user' }, 'approval', { action_ids: pending }));
  drafts.push(statusChange(context, 'running', 'actions approved'));
  return drafts;
}

/** Reject the actions awaiting confirmation: each gets a user_rejection the model reads; the conversation goes idle. */
export function rejectCommand(state: CommandState, context: Context, reason: string): EventDraft[] {
  const status = state.status;
  if (status !== 'waiting_for_confirmation')
    throw new CommandRefused('not_waiting', `Nothing awaits confirmation (status ${status}).`, status);
  const pending = notStartedActions(state);
  if (pending.length === 0) throw new CommandRefused('nothing_pending', 'No action awaits confirmation.', status);
  return [...rejections(pending, context, reason), statusChange(context, 'idle', 'actions rejected')];
}

/**
 * What comes before a message that stops a running conversation's work in flight (on_busy
 * `interrupt` or `rollback`): an interrupt (broadcast with its commit's position once appended,
 * so the model call and commands in flight stop and the step the message wakes does not), and a
 * rejection of each pending call no runner has started, so it never runs and the model reads why.
 * The status stays running: the next step reads the message.
 */
export function interruptForMessage(state: CommandState, context: Context): EventDraft[] {
  const reason = 'a new user message interrupted the run';
  return [
    draftEvent({ ...context, source: 'user' }, 'interrupt', { reason }),
    ...rejections(notStartedActions(state), context, reason),
  ];
}

function rejections(actions: ReturnType<typeof notStartedActions>, context: Context, reason: string): EventDraft[] {
  return actions.map((action) =>
    draftEvent({ ...context, source: 'user' }, 'user_rejection', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      reason,
      rejection_source: 'user',
    }),
  );
}
