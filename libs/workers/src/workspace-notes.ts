import type { EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { RestartReason } from '@flotilla/sandbox';
import { conversationKey as key } from './tool-runner-dependencies.js';

export const WORKSPACE_MOVED_NOTE =
  "[Note: this conversation's workspace moved to another tool runner because the previous one stopped. " +
  'Files are intact, but the terminal session was restarted: environment variables, the working directory ' +
  'and background processes from before are gone.]';

export const WORKSPACE_REBUILT_NOTE =
  "[Note: this conversation's workspace moved to another tool runner because the previous one stopped, and its " +
  'files were not reachable from here: the workspace was rebuilt empty, and the terminal session was restarted. ' +
  'Recreate what you need before continuing.]';

export const SANDBOX_RESTARTED_NOTES: Readonly<Record<RestartReason, string>> = {
  [RestartReason.Idle]:
    "[Note: this conversation's sandbox was stopped after a while without commands and started again. Files are intact, but the " +
    'terminal session was restarted: environment variables, the working directory and background processes from before are gone.]',
  [RestartReason.Environment]:
    "[Note: this conversation's secrets changed, so its sandbox was started again with them. Files are intact, but the terminal " +
    'session was restarted: environment variables, the working directory and background processes from before are gone.]',
};

/**
 * What a conversation's next batch owes the agent, noted where it happened outside a batch: a
 * restart of its sandbox, or a take-over of its workspace, that a workspace request (or a listing
 * of MCP servers) met first.
 */
export class OwedNotes {
  /** Why a conversation's sandbox was restarted, when a listing of its MCP servers (or a workspace request) used it first: its next batch says so. */
  readonly #restarts = new Map<string, RestartReason>();
  /**
   * Workspaces this runner took over from a dead owner to answer a workspace request: the next
   * batch tells the agent, as a take-over by a batch does (whether the files were there then).
   */
  readonly #takeOvers = new Map<string, boolean>();

  restarted(ref: ConversationRef, reason: RestartReason): void {
    this.#restarts.set(key(ref), reason);
  }

  tookOver(ref: ConversationRef, existed: boolean): void {
    this.#takeOvers.set(key(ref), existed);
  }

  /** Why the sandbox restarted since the last batch, if it did; told once. */
  takeRestart(ref: ConversationRef): RestartReason | undefined {
    const reason = this.#restarts.get(key(ref));
    this.#restarts.delete(key(ref));
    return reason;
  }

  /** Whether the files were there when a workspace request took the workspace over, if one did; told once. */
  takeTakeOver(ref: ConversationRef): boolean | undefined {
    const existed = this.#takeOvers.get(key(ref));
    this.#takeOvers.delete(key(ref));
    return existed;
  }

  /** Forgets what the conversation was owed (it was deleted). */
  forget(ref: ConversationRef): void {
    this.#restarts.delete(key(ref));
    this.#takeOvers.delete(key(ref));
  }
}

/**
 * Puts the notes a batch owes the agent before what its first observation says: that the
 * workspace moved here (and was rebuilt empty, when its files were not there), and why its
 * sandbox restarted.
 */
export function addNotes(
  drafts: EventDraft[],
  owed: { readonly tookOver: boolean; readonly existed: boolean; readonly restarted: RestartReason | undefined },
): void {
  const notes = [
    ...(owed.tookOver ? [owed.existed ? WORKSPACE_MOVED_NOTE : WORKSPACE_REBUILT_NOTE] : []),
    ...(owed.restarted ? [SANDBOX_RESTARTED_NOTES[owed.restarted]] : []),
  ];
  const firstIndex = drafts.findIndex((draft) => draft.type === 'observation');
  const first = drafts[firstIndex];
  if (notes.length > 0 && first?.type === 'observation') {
    drafts[firstIndex] = {
      ...first,
      content: [...notes.map((text) => ({ type: 'text' as const, text })), ...first.content],
    };
  }
}
