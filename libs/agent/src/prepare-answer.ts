import {
  draftEvent,
  type ActionEvent,
  type DraftContext,
  type Event,
  type EventDraft,
  type MessageEvent,
} from '@flotilla/events';
import { hookExecutionDraft, hookInput, hookMessageDraft, type HookOutcome } from './hook-outcome.js';
import { hooksFor, type HookCommand, type HookPoint, type HooksConfig } from './hooks-config.js';
import type { PrepareNeeds } from './prepare-duty.js';
import { workspaceContextDraft, type WorkspaceContextPayload } from './workspace-context.js';

/** Runs one hook with its input JSON: in the conversation's sandbox (a command) or POSTed (HTTP). */
export type HookRun = (hook: HookCommand, input: string) => Promise<HookOutcome>;

export type PrepareInput = {
  readonly needs: PrepareNeeds;
  /** The conversation's log (the user messages named in `needs.prompts` are read from it). */
  readonly events: readonly Event[];
  readonly hooks: HooksConfig;
  readonly ref: { readonly tenant: string; readonly conversation: string };
  readonly readContext: () => Promise<WorkspaceContextPayload>;
  readonly run: HookRun;
  readonly now?: () => Date;
};

/**
 * The one commit that answers a `prepare`: the workspace's context, then each owed hook point's
 * hooks in turn (SessionStart, UserPromptSubmit per message, Stop, SessionEnd), each run a
 * `hook_execution`. What the model must read becomes a message from the hook: context a hook
 * adds, a Stop hook's refusal. A UserPromptSubmit hook that blocks a message ends the run
 * (`idle`, saying why) and the message is not answered.
 */
export async function prepareDrafts(input: PrepareInput): Promise<EventDraft[]> {
  const { needs, ref } = input;
  const context = { ...ref, ...(input.now ? { now: input.now } : {}) };
  const drafts: EventDraft[] = [];
  if (needs.context)
    drafts.push(workspaceContextDraft({ ...context, source: 'environment' }, await input.readContext()));
  const runAll = async (
    point: HookPoint,
    about: Readonly<Record<string, unknown>>,
    parent?: string,
  ): Promise<HookOutcome[]> => {
    const outcomes: HookOutcome[] = [];
    for (const hook of hooksFor(input.hooks, point)) {
      const outcome = await input.run(hook, hookInput(point, ref, about));
      drafts.push(hookExecutionDraft(context, point, hook, outcome, parent === undefined ? {} : { parent }));
      outcomes.push(outcome);
      if (outcome.decision === 'deny') break;
    }
    return outcomes;
  };
  const addedContext = (outcomes: readonly HookOutcome[], parent?: string): void => {
    const texts = outcomes.flatMap((outcome) =>
      outcome.decision !== 'deny' && outcome.context ? [outcome.context] : [],
    );
    if (texts.length > 0) drafts.push(hookMessageDraft(context, texts.join('\n\n'), parent));
  };
  if (needs.sessionStart) addedContext(await runAll('sessionStart', { source: 'startup' }));
  for (const id of needs.prompts) {
    const message = input.events.find((event): event is MessageEvent => event.type === 'message' && event.id === id);
    const prompt = message?.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n') ?? '';
    const outcomes = await runAll('userPromptSubmit', { prompt }, id);
    const denied = outcomes.find((outcome) => outcome.decision === 'deny');
    if (denied) {
      drafts.push(
        draftEvent({ ...context, source: 'system' }, 'state_change', {
          status: 'idle',
          reason: `a UserPromptSubmit hook blocked the message: ${denied.reason ?? 'no reason given'}`,
        }),
      );
      return drafts;
    }
    addedContext(outcomes, id);
  }
  if (needs.stop) {
    const outcomes = await runAll('stop', { stop_hook_active: false, last_message: lastAgentText(input.events) });
    const denied = outcomes.find((outcome) => outcome.decision === 'deny');
    if (denied) {
      drafts.push(
        hookMessageDraft(
          context,
          `A Stop hook refused to end the run: ${denied.reason ?? 'no reason given'}\nDo what it asks, then finish again.`,
        ),
      );
    }
  }
  if (needs.sessionEnd) await runAll('sessionEnd', { reason: 'finished' });
  return drafts;
}

/** The answer of a PreToolUse hook that blocked an action: a rejection the model reads, from the hook. */
export function hookRejectionDraft(
  context: Omit<DraftContext, 'source' | 'parent'>,
  action: ActionEvent,
  reason: string,
): EventDraft {
  return draftEvent({ ...context, source: 'hook', parent: action.id }, 'user_rejection', {
    action_id: action.id,
    tool_call_id: action.tool_call_id,
    tool_name: action.tool_name,
    reason,
    rejection_source: 'hook',
  });
}

function lastAgentText(events: readonly Event[]): string {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'message' && event.source === 'agent')
      return event.content
        .flatMap((part) => (part.type === 'text' ? [part.text] : []))
        .join('\n')
        .slice(0, 4_000);
  }
  return '';
}
