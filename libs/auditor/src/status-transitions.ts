import type { ConversationStatus } from '@flotilla/events';

/**
 * The conversation status machine: for each status, the statuses a state_change may move it to.
 * A conversation starts `idle`. Setting the status it already has is a no-op and always allowed.
 *
 * - idle → running: a run is requested.
 * - running → paused (the user paused), waiting_for_confirmation (a step decided actions that need
 *   approval), finished / error / stuck (a step ended the run), idle (the run was stopped without
 *   an outcome).
 * - paused → running: resumed. (A paused conversation is not reopened by a message alone.)
 * - waiting_for_confirmation → running (approved), idle (rejected). Not → paused: a pause never
 *   overrides a pending confirmation (LocalConversation.pause).
 * - finished, stuck → idle (a new user message) or running (a new message with run, or a run).
 * - error → running (retry) or idle.
 */
export const STATUS_TRANSITIONS = {
  idle: ['running'],
  running: ['paused', 'waiting_for_confirmation', 'finished', 'error', 'stuck', 'idle'],
  paused: ['running'],
  waiting_for_confirmation: ['running', 'idle'],
  finished: ['idle', 'running'],
  stuck: ['idle', 'running'],
  error: ['running', 'idle'],
} as const satisfies Record<ConversationStatus, readonly ConversationStatus[]>;

export const INITIAL_STATUS: ConversationStatus = 'idle';

/** Resting statuses in which unanswered actions are legitimate: the user holds the conversation. */
export const HOLDING_STATUSES: readonly ConversationStatus[] = ['waiting_for_confirmation', 'paused'];

export function isAllowedTransition(from: ConversationStatus, to: ConversationStatus): boolean {
  return from === to || (STATUS_TRANSITIONS[from] as readonly ConversationStatus[]).includes(to);
}
