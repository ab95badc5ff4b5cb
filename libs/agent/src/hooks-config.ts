import { z } from 'zod';

/** A hook's command, run in the conversation's sandbox with the hook's event as JSON on stdin. */
export const CommandHook = z.strictObject({
  type: z.literal('command'),
  /** Run by `sh -c` in the workspace. */
  command: z.string().min(1).max(4_000),
  timeoutSeconds: z.number().int().min(1).max(600).default(60),
});

/** A hook POSTed the event as JSON; its URL must start with one the operator allows (OperatorLimits.hookUrls). */
export const HttpHook = z.strictObject({
  type: z.literal('http'),
  url: z.url({ protocol: /^https?$/ }),
  timeoutSeconds: z.number().int().min(1).max(120).default(10),
});

export const HookCommand = z.discriminatedUnion('type', [CommandHook, HttpHook]);
export type HookCommand = z.infer<typeof HookCommand>;

/** Hooks for the tools a matcher names: `*` (every tool), a tool's name, or names joined by `|`. */
export const HookMatcher = z.strictObject({
  matcher: z.string().min(1).max(500).default('*'),
  hooks: z.array(HookCommand).min(1).max(10),
});
export type HookMatcher = z.infer<typeof HookMatcher>;

const Hooks = z.array(HookMatcher).max(10).default([]);

/**
 * Hooks at a conversation's lifecycle points, with OpenHands' semantics (hooks.md in its SDK):
 * `preToolUse` may block an action (the model reads why), `postToolUse` may add feedback to a
 * result, `userPromptSubmit` may block a user's message or add context the model reads,
 * `sessionStart` runs before the conversation's first step (and may add context), `sessionEnd`
 * when a run finishes, and `stop` may refuse the agent's finish once per run, with feedback the
 * model reads. Each run of a hook is a `hook_execution` event.
 */
export const HooksConfig = z.strictObject({
  preToolUse: Hooks,
  postToolUse: Hooks,
  userPromptSubmit: Hooks,
  sessionStart: Hooks,
  sessionEnd: Hooks,
  stop: Hooks,
});
export type HooksConfig = z.infer<typeof HooksConfig>;
export type HookPoint = keyof HooksConfig;

/** The hook points of a spec as the log carries it (an `agent_spec` event's JSON) that have hooks; none when its `hooks` does not parse. */
export function hookPointsIn(spec: Readonly<Record<string, unknown>>): ReadonlySet<HookPoint> {
  const parsed = HooksConfig.safeParse(spec['hooks'] ?? {});
  if (!parsed.success) return new Set();
  return new Set((Object.keys(parsed.data) as HookPoint[]).filter((point) => parsed.data[point].length > 0));
}

/** The hooks at `point` whose matcher takes `toolName` (every hook of the point when there is no tool). */
export function hooksFor(config: HooksConfig, point: HookPoint, toolName?: string): HookCommand[] {
  return config[point]
    .filter((entry) => toolName === undefined || matches(entry.matcher, toolName))
    .flatMap((entry) => entry.hooks);
}

function matches(matcher: string, toolName: string): boolean {
  return matcher
    .split('|')
    .map((name) => name.trim())
    .some((name) => name === '*' || name === toolName);
}

/** How hook_execution names each point. */
export const HOOK_EVENT_NAMES = {
  preToolUse: 'pre_tool_use',
  postToolUse: 'post_tool_use',
  userPromptSubmit: 'user_prompt_submit',
  sessionStart: 'session_start',
  sessionEnd: 'session_end',
  stop: 'stop',
} as const satisfies Record<HookPoint, string>;
