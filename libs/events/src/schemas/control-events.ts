import { z } from 'zod';
import { EventId } from '../ids.js';
import { SpecName } from './agent-spec-events.js';
import { envelope, requireFieldVersions } from './envelope.js';

/** Forget events from the view; optionally put a summary in their place. Nothing is deleted. */
export const CondensationEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('condensation'),
    forgotten_event_ids: z.array(EventId),
    summary: z.string().optional(),
    /** Index in the condensed view where the summary goes. */
    summary_offset: z.number().int().nonnegative().optional(),
    response_id: z.string().min(1).optional(),
  })
  .refine((event) => (event.summary === undefined) === (event.summary_offset === undefined), {
    message: 'summary and summary_offset go together',
    path: ['summary_offset'],
  });
export type CondensationEvent = z.infer<typeof CondensationEvent>;

/** Ask the condenser to condense now (context overflow, or a user's request). */
export const CondensationRequestEvent = z.strictObject({
  ...envelope,
  type: z.literal('condensation_request'),
  reason: z.string().optional(),
});
export type CondensationRequestEvent = z.infer<typeof CondensationRequestEvent>;

export const ConversationStatus = z.enum([
  'idle',
  'running',
  'paused',
  'waiting_for_confirmation',
  'finished',
  'error',
  'stuck',
]);
export type ConversationStatus = z.infer<typeof ConversationStatus>;

/**
 * What a user message does when it arrives while the conversation is running ("double-texting"):
 * `enqueue` logs it for the agent's next step, the work in flight going on; `reject` refuses it
 * (409 conversation_busy, naming where the run began); `interrupt` stops the work in flight and the
 * run goes on from the message; `rollback` also takes what the run did since it began out of the
 * model's view (a rewind: the log keeps it) before the message. A message's own choice, else its
 * conversation's spec's `on_busy`.
 */
export const OnBusy = z.enum(['enqueue', 'reject', 'interrupt', 'rollback']);
export type OnBusy = z.infer<typeof OnBusy>;

/** A change of status or metadata. The conversation's status is the last status set. */
export const StateChangeEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('state_change'),
    status: ConversationStatus.optional(),
    title: z.string().max(200).optional(),
    tags: z.array(z.string().min(1).max(64)).max(32).optional(),
    /** Reference to the agent settings in force (e.g. a content hash or a settings record key). */
    settings_ref: z.string().min(1).max(256).optional(),
    reason: z.string().optional(),
  })
  .refine(
    (event) =>
      event.status !== undefined ||
      event.title !== undefined ||
      event.tags !== undefined ||
      event.settings_ref !== undefined,
    { message: 'a state change sets at least one of status, title, tags, settings_ref', path: ['status'] },
  );
export type StateChangeEvent = z.infer<typeof StateChangeEvent>;

/** The run stopped for a reason the user must see (max iterations, budget, LLM failure, …). */
export const ConversationErrorEvent = z.strictObject({
  ...envelope,
  type: z.literal('conversation_error'),
  code: z.string().min(1),
  detail: z.string(),
});
export type ConversationErrorEvent = z.infer<typeof ConversationErrorEvent>;

/** A request to pause after the current step. */
export const PauseEvent = z.strictObject({
  ...envelope,
  type: z.literal('pause'),
  reason: z.string().optional(),
});
export type PauseEvent = z.infer<typeof PauseEvent>;

/** A request to cancel the in-flight LLM call or tool at once. */
export const InterruptEvent = z.strictObject({
  ...envelope,
  type: z.literal('interrupt'),
  reason: z.string().optional(),
});
export type InterruptEvent = z.infer<typeof InterruptEvent>;

/** A hook (shell command run at a lifecycle point) ran, and what it decided. */
export const HookExecutionEvent = z.strictObject({
  ...envelope,
  type: z.literal('hook_execution'),
  hook: z.enum(['pre_tool_use', 'post_tool_use', 'user_prompt_submit', 'session_start', 'session_end', 'stop']),
  command: z.string(),
  exit_code: z.number().int().nullable(),
  decision: z.enum(['allow', 'deny', 'none']),
  output: z.string().optional(),
  action_id: EventId.optional(),
});
export type HookExecutionEvent = z.infer<typeof HookExecutionEvent>;

const TokenCount = z.number().int().nonnegative();

/**
 * The fallback that made an LLM call when the provider of the spec's model was out: its index in
 * the spec's `llm.fallbacks` (0 for the first), and which model it is. Introduced in protocol
 * version 5.
 */
export const LlmFallback = z.strictObject({
  index: z.number().int().nonnegative(),
  provider: z.string().min(1),
  model: z.string().min(1),
  /** The operator's model profile it is, when it is one. */
  profile: SpecName.optional(),
});
export type LlmFallback = z.infer<typeof LlmFallback>;

/** Usage and cost of one LLM call. `model` is the model the provider says answered. */
export const LlmUsageEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('llm_usage'),
    model: z.string().min(1),
    purpose: z.enum(['step', 'condensation', 'other']),
    response_id: z.string().min(1).optional(),
    prompt_tokens: TokenCount,
    completion_tokens: TokenCount,
    cache_read_tokens: TokenCount,
    cache_write_tokens: TokenCount,
    reasoning_tokens: TokenCount,
    latency_ms: z.number().nonnegative(),
    cost_usd: z.number().nonnegative(),
    /** Absent when the spec's own model made the call. */
    fallback: LlmFallback.optional(),
  })
  .superRefine(requireFieldVersions);
export type LlmUsageEvent = z.infer<typeof LlmUsageEvent>;
