import { draftEvent, type DraftContext, type EventDraft } from '@flotilla/events';
import { HOOK_EVENT_NAMES, type HookCommand, type HookPoint } from './hooks-config.js';

/** Bounds on what a hook's run keeps: its output in the event, the context or feedback the model reads. */
export const HOOK_OUTPUT_BOUNDS = { outputChars: 4_000, contextChars: 10_000, readBytes: 64 * 1024 } as const;

/** What one run of a hook decided. */
export type HookOutcome = {
  readonly decision: 'allow' | 'deny' | 'none';
  /** The process's exit code; null when it timed out, could not start, or was an HTTP hook. */
  readonly exitCode: number | null;
  /** Why it denied, for the model (and the user). */
  readonly reason?: string;
  /** Context it adds for the model (UserPromptSubmit, SessionStart) or feedback on a result (PostToolUse). */
  readonly context?: string;
  /** What it printed (or why it did not run), bounded, for the log. */
  readonly output: string;
};

/**
 * A hook's decision from how it ended, with OpenHands' (and Claude Code's) conventions: exit
 * code 2 blocks, with stderr as the reason; exit 0 allows, and its stdout may be a JSON object
 * (`decision`: `deny` or `block` blocks with `reason`; `additionalContext`, also under
 * `hookSpecificOutput`, adds context) or plain text (context); any other exit is an error of the
 * hook, which blocks nothing.
 */
export function hookOutcome(exitCode: number | null, stdout: string, stderr: string): HookOutcome {
  const output = clip([stdout.trim(), stderr.trim()].filter(Boolean).join('\n'), HOOK_OUTPUT_BOUNDS.outputChars);
  if (exitCode === 2)
    return {
      decision: 'deny',
      exitCode,
      reason: clip(stderr.trim() || stdout.trim() || 'blocked by a hook', HOOK_OUTPUT_BOUNDS.contextChars),
      output,
    };
  if (exitCode !== 0) return { decision: 'none', exitCode, output };
  const answer = jsonObject(stdout);
  if (!answer) {
    const text = stdout.trim();
    return {
      decision: 'allow',
      exitCode,
      ...(text ? { context: clip(text, HOOK_OUTPUT_BOUNDS.contextChars) } : {}),
      output,
    };
  }
  const specific =
    typeof answer['hookSpecificOutput'] === 'object' && answer['hookSpecificOutput'] !== null
      ? (answer['hookSpecificOutput'] as Record<string, unknown>)
      : {};
  const context = [answer['additionalContext'], specific['additionalContext']].find(
    (value): value is string => typeof value === 'string' && value.trim() !== '',
  );
  const decision = answer['decision'] ?? specific['permissionDecision'];
  const reason = [answer['reason'], specific['permissionDecisionReason']].find(
    (value): value is string => typeof value === 'string' && value.trim() !== '',
  );
  if (decision === 'deny' || decision === 'block')
    return {
      decision: 'deny',
      exitCode,
      reason: clip(reason ?? 'blocked by a hook', HOOK_OUTPUT_BOUNDS.contextChars),
      output,
    };
  return {
    decision: 'allow',
    exitCode,
    ...(context ? { context: clip(context, HOOK_OUTPUT_BOUNDS.contextChars) } : {}),
    output,
  };
}

/** A hook that did not give an answer (a timeout, a process that could not start, an HTTP error): it blocks nothing. */
export function failedHook(why: string): HookOutcome {
  return { decision: 'none', exitCode: null, output: clip(why, HOOK_OUTPUT_BOUNDS.outputChars) };
}

/** The `hook_execution` event of one run; `parent` is what it ran for (an action, a message). */
export function hookExecutionDraft(
  context: Omit<DraftContext, 'source' | 'parent'>,
  point: HookPoint,
  hook: HookCommand,
  outcome: HookOutcome,
  about: { readonly actionId?: string; readonly parent?: string } = {},
): EventDraft {
  return draftEvent(
    { ...context, source: 'hook', ...(about.parent === undefined ? {} : { parent: about.parent }) },
    'hook_execution',
    {
      hook: HOOK_EVENT_NAMES[point],
      command: hook.type === 'command' ? hook.command : `POST ${hook.url}`,
      exit_code: outcome.exitCode,
      decision: outcome.decision,
      ...(outcome.output === '' ? {} : { output: outcome.output }),
      ...(about.actionId === undefined ? {} : { action_id: about.actionId }),
    },
  );
}

/** What hooks said for the model to read, as a user-role message from the hook (its text in `extended_content`, as skills are). */
export function hookMessageDraft(
  context: Omit<DraftContext, 'source' | 'parent'>,
  text: string,
  parent?: string,
): EventDraft {
  return draftEvent({ ...context, source: 'hook', ...(parent === undefined ? {} : { parent }) }, 'message', {
    role: 'user',
    content: [],
    extended_content: [{ type: 'text', text }],
  });
}

/** The JSON a hook gets on stdin (or as the POST body): its point, the conversation, and what it is about. */
export function hookInput(
  point: HookPoint,
  ref: { readonly tenant: string; readonly conversation: string },
  about: Readonly<Record<string, unknown>>,
): string {
  const names: Record<HookPoint, string> = {
    preToolUse: 'PreToolUse',
    postToolUse: 'PostToolUse',
    userPromptSubmit: 'UserPromptSubmit',
    sessionStart: 'SessionStart',
    sessionEnd: 'SessionEnd',
    stop: 'Stop',
  };
  return JSON.stringify({ hook_event_name: names[point], session_id: ref.conversation, tenant: ref.tenant, ...about });
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
