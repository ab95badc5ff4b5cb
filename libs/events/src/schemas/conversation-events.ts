import { z } from 'zod';
import { EventId } from '../ids.js';
import { ContentPart, Reasoning } from './content.js';
import { envelope, requireFieldVersions } from './envelope.js';

/** A tool as the model was shown it. `parameters` is a JSON Schema object. */
export const ToolSpec = z.strictObject({
  name: z.string().min(1).max(128),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  annotations: z
    .strictObject({
      read_only: z.boolean().optional(),
      destructive: z.boolean().optional(),
      idempotent: z.boolean().optional(),
      open_world: z.boolean().optional(),
    })
    .optional(),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

/** The system prompt, emitted once before anything the LLM sees. */
export const SystemPromptEvent = z.strictObject({
  ...envelope,
  type: z.literal('system_prompt'),
  /** Static, cacheable block shared across conversations. */
  static_prompt: z.string(),
  /** Per-conversation block (date, skills, repository context); never cache-marked. */
  dynamic_prompt: z.string().optional(),
  tools: z.array(ToolSpec),
});
export type SystemPromptEvent = z.infer<typeof SystemPromptEvent>;

/**
 * A chat message. `source` tells who wrote it: `user` (a person), `agent` (the model's
 * text reply) or `environment` (a framework nudge the model reads as a user turn).
 */
export const MessageEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('message'),
    role: z.enum(['user', 'assistant']),
    content: z.array(ContentPart),
    reasoning: Reasoning.optional(),
    response_id: z.string().min(1).optional(),
    activated_skills: z.array(z.string()).optional(),
    extended_content: z.array(ContentPart).optional(),
  })
  .superRefine(requireFieldVersions);
export type MessageEvent = z.infer<typeof MessageEvent>;

export const SecurityRisk = z.enum(['unknown', 'low', 'medium', 'high']);
export type SecurityRisk = z.infer<typeof SecurityRisk>;

/**
 * One tool call of the model. Parallel calls of one response are separate action events
 * sharing `response_id`; the text and reasoning of the response ride on the first.
 * `input` is the validated arguments, or null when the call could not be understood
 * (unknown tool, invalid JSON, schema violation) — an agent_error then answers it.
 */
export const ActionEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('action'),
    tool_call_id: z.string().min(1),
    tool_name: z.string().min(1),
    arguments: z.string(),
    input: z.record(z.string(), z.unknown()).nullable(),
    thought: z.array(ContentPart),
    reasoning: Reasoning.optional(),
    response_id: z.string().min(1),
    security_risk: SecurityRisk,
    summary: z.string().optional(),
  })
  .superRefine(requireFieldVersions);
export type ActionEvent = z.infer<typeof ActionEvent>;

/** The result of running an action. */
export const ObservationEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('observation'),
    action_id: EventId,
    tool_call_id: z.string().min(1),
    tool_name: z.string().min(1),
    content: z.array(ContentPart),
    is_error: z.boolean(),
    /** Tool-specific, e.g. exit_code, cwd, still_running, offloaded output path. */
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine(requireFieldVersions);
export type ObservationEvent = z.infer<typeof ObservationEvent>;

/**
 * An error the model should read. With a tool_call_id it answers that call (unknown tool,
 * bad JSON, schema violation, tool failure, interrupted execution); without one it is a
 * free-standing scaffold error.
 */
export const AgentErrorEvent = z
  .strictObject({
    ...envelope,
    type: z.literal('agent_error'),
    tool_call_id: z.string().min(1).optional(),
    tool_name: z.string().min(1).optional(),
    action_id: EventId.optional(),
    error: z.string().min(1),
  })
  .superRefine((event, context) => {
    // A tool result needs both: providers match it by id, and some (Gemini) also by name.
    if (event.tool_call_id !== undefined && event.tool_name === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['tool_name'],
        message: 'an error that answers a tool call names its tool',
      });
    }
    if (event.tool_call_id === undefined && (event.tool_name !== undefined || event.action_id !== undefined)) {
      context.addIssue({
        code: 'custom',
        path: ['tool_call_id'],
        message: 'tool_name and action_id only go with the tool_call_id the error answers',
      });
    }
  });
export type AgentErrorEvent = z.infer<typeof AgentErrorEvent>;

/** A pending action the user (or a hook) refused; answers the action's tool call. */
export const UserRejectionEvent = z.strictObject({
  ...envelope,
  type: z.literal('user_rejection'),
  action_id: EventId,
  tool_call_id: z.string().min(1),
  tool_name: z.string().min(1),
  reason: z.string(),
  rejection_source: z.enum(['user', 'hook']),
});
export type UserRejectionEvent = z.infer<typeof UserRejectionEvent>;

/** The user approved pending actions that awaited confirmation. */
export const ApprovalEvent = z.strictObject({
  ...envelope,
  type: z.literal('approval'),
  action_ids: z.array(EventId).min(1),
});
export type ApprovalEvent = z.infer<typeof ApprovalEvent>;

/** A tool runner is about to run these actions (recorded first, so a crash never re-runs them). */
export const ExecutionStartedEvent = z.strictObject({
  ...envelope,
  type: z.literal('execution_started'),
  action_ids: z.array(EventId).min(1),
  runner: z.string().min(1),
});
export type ExecutionStartedEvent = z.infer<typeof ExecutionStartedEvent>;
