import type { ActionEvent, Event } from '@flotilla/events';
import type { PrepareNeeds } from './prepare-duty.js';
import { ConversationProgress } from './progress.js';

/**
 * What a conversation needs next, decided from its whole log (never from one delivered commit);
 * `ConversationProgress` decides the same incrementally. This is the one place that decides it:
 * every service and `LocalConversation` act on its answer, each on its kind: tool runners on
 * `execute` (and wait on `in_progress`), step workers on `step` (a model call) and `finish` (the
 * agent's finish call came back: the run ends, no model call), the condenser on `condense`, and
 * tool runners on `prepare`: the owner of the workspace reads what it says (repository context,
 * skills, path rules) into the log (`workspace_context`) before the first step of a spec that
 * turns skills on, and runs the spec's hooks that come before a step or a finish (`PrepareNeeds`);
 * the step waits for it. The delegator owes `delegate`: the pending `task` calls whose children
 * it has not started (after the batch's tool calls are answered); `delegated` means the children
 * work, and their ends, not this log, wake the delegator to answer the calls. `rest` means nobody
 * owes anything (the conversation is not running).
 */
export type NextWork =
  | { readonly kind: 'rest' }
  | { readonly kind: 'execute'; readonly actions: readonly ActionEvent[]; readonly interrupted: readonly ActionEvent[] }
  | { readonly kind: 'in_progress'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'finish' }
  | { readonly kind: 'condense' }
  | { readonly kind: 'prepare'; readonly needs: PrepareNeeds }
  | { readonly kind: 'delegate'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'delegated'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'step' };

export type NextWorkOptions = {
  /** Is the runner that recorded an action's start still alive? Default: no (in-process after a restart). */
  readonly runnerAlive?: (runner: string) => boolean;
};

export function nextWork(events: readonly Event[], options: NextWorkOptions = {}): NextWork {
  return ConversationProgress.of(events).nextWork(options);
}

/**
 * Event types a commit may consist of without ever leaving a step due after it:
 * `execution_started` only marks pending actions as started, and a step's commit of actions (with
 * its usage, and the system prompt on the first step) leaves them pending (a call that cannot run is answered by an agent_error in the same commit, and
 * agent_error is not in this set). Lets a step worker dismiss such a commit from its header alone.
 */
const STEP_NEVER_DUE_AFTER: ReadonlySet<string> = new Set([
  'system_prompt',
  'llm_usage',
  'action',
  'execution_started',
]);

/**
 * True when a commit of exactly these event types (as its Flotilla-Event-Types header lists
 * them) cannot leave a step due, whatever came before it. Unknown or empty: false.
 */
export function stepNeverDueAfter(commitTypes: readonly string[]): boolean {
  if (!commitTypes.includes('action') && !commitTypes.includes('execution_started')) return false;
  return commitTypes.every((type) => STEP_NEVER_DUE_AFTER.has(type));
}
