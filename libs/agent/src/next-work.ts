import type { Event } from '@flotilla/events';
import { ConversationProgress, type NextWork, type NextWorkOptions } from './progress.js';

/**
 * `NextWork` decided from a whole log at once, for a caller that keeps no `ConversationProgress`:
 * the same fold, so the same answer as one appended commit by commit.
 */
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
