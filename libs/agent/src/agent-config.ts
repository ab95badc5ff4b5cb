import { CondenserConfig } from '@flotilla/condenser';
import { OnBusy } from '@flotilla/events';
import { LlmConfig } from '@flotilla/llm';
import { z } from 'zod';
import { CHECKPOINT_STUCK_STEPS } from './conversation-checkpoint.js';
import { McpServersSpec } from './mcp-spec.js';
import { SecurityConfig } from './security-analyzer.js';
import { HooksConfig } from './hooks-config.js';
import { SkillsConfig } from './skills-config.js';
import { SubAgentDefinition } from './sub-agents.js';
import { DEFAULT_STUCK_THRESHOLDS } from './stuck-detector.js';

/**
 * Three: the same loops would otherwise end later and less clearly by the stuck detector's rules
 * (an identical failing call three times, three agent messages in a row), or not before the
 * iteration limit when each invalid reply differs.
 */
const DEFAULT_MAX_INVALID_REPLIES_IN_ROW = 3;

export const ConfirmationPolicy = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('never') }),
  z.strictObject({ mode: z.literal('always') }),
  /** Confirm actions whose risk (rated by the `security` analyzers) is at or above the threshold (unknown counts as high). */
  z.strictObject({ mode: z.literal('risky'), threshold: z.enum(['low', 'medium', 'high']).default('high') }),
]);
export type ConfirmationPolicy = z.infer<typeof ConfirmationPolicy>;

/**
 * An agent: an immutable, serialisable configuration. Everything that changes while a
 * conversation runs lives in the conversation's log, never here.
 */
export const AgentConfig = z.strictObject({
  llm: LlmConfig,
  /** Names of the built-in tools offered to the model (a service refuses a name it cannot offer); MCP servers' tools come from `mcpServers`. */
  tools: z.array(z.string().min(1)).default(['terminal', 'file_editor', 'task_tracker', 'think', 'finish']),
  /** MCP servers whose tools are offered too, once the tool runner has started them and listed their tools in the log. */
  mcpServers: McpServersSpec,
  /**
   * The sub-agents the `task` tool (when `tools` names it) may start, each in a child
   * conversation of its own (sub-agents.ts); their names are unique, their tools a subset of these.
   */
  subAgents: z.array(SubAgentDefinition).max(32).default([]),
  prompt: z
    .strictObject({
      /** Extra instructions appended to the static system prompt (cached across conversations). */
      instructions: z.string().optional(),
      /** Per-conversation context (repository notes…), in the dynamic, uncached block. */
      context: z.string().optional(),
      /** Put today's date in the dynamic block. */
      includeDate: z.boolean().default(true),
    })
    .default({ includeDate: true }),
  limits: z
    .strictObject({
      /** LLM steps per run before the run ends with an error. */
      maxIterationsPerRun: z.number().int().positive().default(500),
      /** Spend per run (USD, from configured prices) before the run ends with an error. */
      maxBudgetPerRunUsd: z.number().positive().optional(),
      /**
       * Model replies in a row the step could not act on and answered with a correction (every
       * tool call invalid, tool calls written as text, an empty or filtered reply) before the run
       * ends with an error (`invalid_replies`) instead of asking again. At most
       * `CHECKPOINT_STUCK_STEPS`, the history a view checkpoint's reader keeps.
       */
      maxInvalidRepliesInRow: z
        .number()
        .int()
        .min(1)
        .max(CHECKPOINT_STUCK_STEPS)
        .default(DEFAULT_MAX_INVALID_REPLIES_IN_ROW),
      /** Sub-agents this conversation may have at work at once (`task` calls beyond are answered with an error); the operator's limit, else 8, when unset. */
      maxSubAgents: z.number().int().min(1).max(64).optional(),
      /** Levels of sub-agents below a conversation a user started (1: a sub-agent cannot start one); the operator's limit, else 2, when unset. */
      maxSubAgentDepth: z.number().int().min(1).max(8).optional(),
    })
    .default({ maxIterationsPerRun: 500, maxInvalidRepliesInRow: DEFAULT_MAX_INVALID_REPLIES_IN_ROW }),
  stuckDetection: z
    .strictObject({
      enabled: z.boolean().default(true),
      actionObservation: z.number().int().min(2).default(DEFAULT_STUCK_THRESHOLDS.actionObservation),
      actionError: z.number().int().min(2).default(DEFAULT_STUCK_THRESHOLDS.actionError),
      monologue: z.number().int().min(2).default(DEFAULT_STUCK_THRESHOLDS.monologue),
      alternating: z.number().int().min(4).default(DEFAULT_STUCK_THRESHOLDS.alternating),
    })
    .default({ enabled: true, ...DEFAULT_STUCK_THRESHOLDS }),
  confirmation: ConfirmationPolicy.default({ mode: 'never' }),
  /**
   * Who rates each action's risk for the confirmation policy: the model (`security_risk` on its
   * calls) and rules over the built-in tools' calls (security-analyzer.ts); the highest counts.
   */
  security: SecurityConfig.prefault({}),
  /**
   * A conversation created without a title gets one written by the agent's model from its first
   * user message, by the condenser service, beside the run (never before its first step).
   */
  titles: z.strictObject({ generate: z.boolean().default(true) }).default({ generate: true }),
  /** Repository context and skills from the workspace (skills-config.ts). */
  skills: SkillsConfig.prefault({}),
  /** Hooks at the conversation's lifecycle points, run by its tool runner (hooks-config.ts). */
  hooks: HooksConfig.prefault({}),
  /** When the view gets too large, the step asks the condenser to summarise part of it. */
  condenser: CondenserConfig.default(CondenserConfig.parse({})),
  /** What a user message that does not say does while the conversation is running (OnBusy; docs/api.md, "Messages while running"). */
  on_busy: OnBusy.default('enqueue'),
  /**
   * How long the conversation is kept once nothing happens in it: `idle_seconds` after its last
   * event (not while it runs) it is deleted everywhere it lives (docs/api.md, "Retention"); the
   * operator's retention for the tenant, if shorter, wins.
   */
  retention: z
    .strictObject({
      idle_seconds: z
        .number()
        .int()
        .min(1)
        .max(100 * 365 * 86_400),
    })
    .optional(),
});
export type AgentConfig = z.infer<typeof AgentConfig>;
export type AgentConfigInput = z.input<typeof AgentConfig>;

export function parseAgentConfig(input: unknown): AgentConfig {
  const parsed = AgentConfig.safeParse(input);
  if (!parsed.success) throw new Error(`invalid agent configuration:\n${z.prettifyError(parsed.error)}`);
  return Object.freeze(parsed.data);
}
