import { draftEvent, type ActionEvent, type ContentPart, type DraftContext, type EventDraft } from '@flotilla/events';
import type { ToolContext, ToolRegistry, ToolResult } from '@flotilla/tools';

export const INTERRUPTED_MESSAGE =
  'Execution of this action was interrupted: the tool runner stopped before it finished, so it may have partly run. ' +
  'It was not run again. Check the workspace state before deciding what to do next.';

/** Wraps each action's run (e.g. in a trace span); it must return what `run` returns. */
export type AroundAction = (action: ActionEvent, run: () => Promise<ToolResult>) => Promise<ToolResult>;

/**
 * Runs a batch of actions and returns their observations in call order (one commit's worth).
 * Actions run concurrently unless they touch a common resource (a file, the terminal), in which
 * case they run in call order. Failures become error observations; this never throws for a tool.
 */
export async function executeActions(
  actions: readonly ActionEvent[],
  registry: ToolRegistry,
  toolContext: ToolContext,
  draftContext: DraftContext,
  around?: AroundAction,
): Promise<EventDraft[]> {
  const keys = actions.map((action) => resourceKeys(action, registry, toolContext));
  const finished: Promise<ToolResult>[] = [];
  actions.forEach((action, index) => {
    const dependencies = finished.filter((_, earlier) => keys[earlier]!.some((key) => keys[index]!.includes(key)));
    const run = async (): Promise<ToolResult> => {
      await Promise.allSettled(dependencies);
      const execute = (): Promise<ToolResult> =>
        registry.execute({ name: action.tool_name, arguments: JSON.stringify(action.input ?? {}) }, toolContext);
      return await (around ? around(action, execute) : execute());
    };
    finished.push(run());
  });
  const results = await Promise.all(finished);
  return results.map((result, index) => observationDraft(actions[index]!, result, draftContext));
}

/** agent_error answers for actions whose execution was cut off by a crash. */
export function interruptedDrafts(actions: readonly ActionEvent[], draftContext: DraftContext): EventDraft[] {
  return actions.map((action) =>
    draftEvent({ ...draftContext, source: 'environment' }, 'agent_error', {
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      action_id: action.id,
      error: INTERRUPTED_MESSAGE,
    }),
  );
}

function resourceKeys(action: ActionEvent, registry: ToolRegistry, toolContext: ToolContext): string[] {
  const validated = registry.validate(
    { name: action.tool_name, arguments: JSON.stringify(action.input ?? {}) },
    toolContext,
  );
  if (!validated.ok) return [];
  if (validated.resources.length > 0) return [...validated.resources];
  return validated.tool.annotations.readOnly ? [] : [`tool:${action.tool_name}`];
}

function observationDraft(action: ActionEvent, result: ToolResult, draftContext: DraftContext): EventDraft {
  const content: ContentPart[] = result.content.map((part) =>
    part.type === 'text'
      ? { type: 'text', text: part.text }
      : { type: 'image', data: part.data, media_type: part.mediaType },
  );
  return draftEvent({ ...draftContext, source: 'environment', parent: action.id }, 'observation', {
    action_id: action.id,
    tool_call_id: action.tool_call_id,
    tool_name: action.tool_name,
    content,
    is_error: result.isError,
    ...(result.details === undefined ? {} : { details: { ...result.details } }),
  });
}
