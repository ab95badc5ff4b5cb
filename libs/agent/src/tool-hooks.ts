import type { ActionEvent, DraftContext, EventDraft } from '@flotilla/events';
import { hookExecutionDraft, hookInput } from './hook-outcome.js';
import { hooksFor, type HooksConfig } from './hooks-config.js';
import { hookRejectionDraft, type HookRun } from './prepare-answer.js';

/**
 * A batch of actions run between their PreToolUse and PostToolUse hooks: an action a PreToolUse
 * hook denies is not run and is answered by a `user_rejection` from the hook, with its reason,
 * which the model reads; the others run (`execute`), and each result goes through the PostToolUse
 * hooks, whose denial or added context is appended to the result for the model. Every hook's run
 * is a `hook_execution` (its `action_id` the action). Results come back in call order, after the
 * hooks' runs.
 */
export async function withToolHooks(
  actions: readonly ActionEvent[],
  hooks: HooksConfig,
  context: Omit<DraftContext, 'source' | 'parent'>,
  run: HookRun,
  execute: (allowed: readonly ActionEvent[]) => Promise<EventDraft[]>,
): Promise<EventDraft[]> {
  if (hooks.preToolUse.length === 0 && hooks.postToolUse.length === 0) return await execute(actions);
  const runs: EventDraft[] = [];
  const rejected = new Map<string, EventDraft>();
  for (const action of actions) {
    for (const hook of hooksFor(hooks, 'preToolUse', action.tool_name)) {
      const outcome = await run(
        hook,
        hookInput('preToolUse', context, {
          tool_name: action.tool_name,
          tool_input: action.input,
          tool_call_id: action.tool_call_id,
        }),
      );
      runs.push(hookExecutionDraft(context, 'preToolUse', hook, outcome, { actionId: action.id, parent: action.id }));
      if (outcome.decision === 'deny') {
        rejected.set(action.id, hookRejectionDraft(context, action, outcome.reason ?? 'blocked by a hook'));
        break;
      }
    }
  }
  const executed = await execute(actions.filter((action) => !rejected.has(action.id)));
  const results: EventDraft[] = [];
  for (const action of actions) {
    const rejection = rejected.get(action.id);
    if (rejection) {
      results.push(rejection);
      continue;
    }
    let result = executed.find(
      (draft) => (draft.type === 'observation' || draft.type === 'agent_error') && draft.action_id === action.id,
    );
    if (!result) continue;
    const notes: string[] = [];
    for (const hook of hooksFor(hooks, 'postToolUse', action.tool_name)) {
      const response =
        result.type === 'observation'
          ? {
              content: result.content
                .flatMap((part) => (part.type === 'text' ? [part.text] : []))
                .join('\n')
                .slice(0, 20_000),
              is_error: result.is_error,
            }
          : { error: result.type === 'agent_error' ? result.error : '' };
      const outcome = await run(
        hook,
        hookInput('postToolUse', context, {
          tool_name: action.tool_name,
          tool_input: action.input,
          tool_call_id: action.tool_call_id,
          tool_response: response,
        }),
      );
      runs.push(hookExecutionDraft(context, 'postToolUse', hook, outcome, { actionId: action.id, parent: action.id }));
      if (outcome.decision === 'deny')
        notes.push(`[A PostToolUse hook objected to this result: ${outcome.reason ?? 'no reason given'}]`);
      else if (outcome.context) notes.push(`[A PostToolUse hook adds: ${outcome.context}]`);
    }
    if (notes.length > 0 && result.type === 'observation')
      result = { ...result, content: [...result.content, ...notes.map((text) => ({ type: 'text' as const, text }))] };
    results.push(result);
  }
  // anything else the batch produced (free-standing notes) stays, after the results
  const answered = new Set(actions.map((action) => action.id));
  const rest = executed.filter(
    (draft) =>
      !(
        (draft.type === 'observation' || draft.type === 'agent_error') &&
        draft.action_id !== undefined &&
        answered.has(draft.action_id)
      ),
  );
  return [...runs, ...results, ...rest];
}
