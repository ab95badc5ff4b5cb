import {
  ConversationStatus,
  EventId,
  isValidEvent,
  type ActionEvent,
  type AgentSpecEvent,
  type Event,
  type McpToolsEvent,
  type SystemPromptEvent,
  type WorkspaceContextEvent,
} from '@flotilla/events';
import { isLlmEvent, ViewBuilder, type LlmEvent, type ViewCheckpoint } from '@flotilla/view';
import { z } from 'zod';
import { ConversationProgress, type ProgressCheckpoint } from './progress.js';
import { RunStateFold, type RunStateCheckpoint } from './run-state.js';
import { SkillsFold, type SkillsCheckpoint } from './skills-fold.js';
import { SpecFold } from './spec-fold.js';
import { stuckLookback } from './stuck-detector.js';

/**
 * What a step reads of a conversation's history, folded up to a point: its view, what it owes
 * (ConversationProgress), its run (RunStateFold). Derived from the log and rebuildable from it:
 * a reader that has one reads only the log after it (and the few events before it that a step's
 * backward looks need, see `CHECKPOINT_STUCK_STEPS`), and decides exactly as from the whole log.
 */
export type ConversationCheckpoint = {
  readonly view: ViewCheckpoint;
  readonly progress: ProgressCheckpoint;
  readonly run: RunStateCheckpoint;
  /** The agent spec in force (its event), if the log had one. */
  readonly spec?: AgentSpecEvent;
  /** What the spec's MCP servers listed (their mcp_tools events), when they listed anything. */
  readonly mcp_tools?: readonly McpToolsEvent[];
  /** The workspace's context in force, and the skills and rules already shown. */
  readonly skills: SkillsCheckpoint;
  /** Stuck detection with thresholds of up to this many steps reads nothing before the events read with the checkpoint. */
  readonly stuck_steps: number;
};

/**
 * Steps of history that stuck detection may look back over, which a checkpoint's reader reads
 * from the log with it (the default thresholds need 6). A step worker configured for more does
 * not use checkpoints.
 */
export const CHECKPOINT_STUCK_STEPS = 12;

/** The folds a step keeps of a conversation, resumed from a checkpoint or started empty. */
export type StepFolds = {
  readonly view: ViewBuilder;
  readonly progress: ConversationProgress;
  readonly run: RunStateFold;
  readonly spec: SpecFold;
  readonly skills: SkillsFold;
};

/**
 * Folds that go on from `checkpoint` (empty ones without), for a caller whose events array holds
 * `before` events ahead of those it appends (the events before the checkpoint that a step's
 * backward looks read).
 */
export function resumeFolds(checkpoint: ConversationCheckpoint | undefined, before = 0): StepFolds {
  if (checkpoint === undefined)
    return {
      view: new ViewBuilder(),
      progress: new ConversationProgress(),
      run: new RunStateFold(),
      spec: new SpecFold(),
      skills: new SkillsFold(),
    };
  return {
    view: ViewBuilder.resume(checkpoint.view),
    progress: ConversationProgress.resume(checkpoint.progress),
    run: RunStateFold.resume(checkpoint.run, before),
    spec: SpecFold.resume(checkpoint.spec, checkpoint.mcp_tools),
    skills: SkillsFold.resume(checkpoint.skills),
  };
}

/**
 * The folds of a loaded conversation: resumed from its checkpoint, if it was loaded from one (its
 * events then begin `folded` events before the checkpoint), and extended by the events after it.
 */
export function foldLoaded(loaded: {
  readonly start?: { readonly state: ConversationCheckpoint; readonly folded: number } | undefined;
  readonly events: readonly Event[];
}): StepFolds {
  const folded = loaded.start?.folded ?? 0;
  const folds = resumeFolds(loaded.start?.state, folded);
  const events = folded === 0 ? loaded.events : loaded.events.slice(folded);
  folds.view.append(events);
  folds.progress.append(events);
  folds.run.append(events);
  folds.spec.append(events);
  folds.skills.append(events);
  return folds;
}

export function checkpointFolds(folds: StepFolds): ConversationCheckpoint {
  const spec = folds.spec.event();
  const listed = folds.spec.listed();
  return {
    view: folds.view.checkpoint(),
    progress: folds.progress.checkpoint(),
    run: folds.run.checkpoint(),
    ...(spec ? { spec } : {}),
    ...(listed.length > 0 ? { mcp_tools: listed } : {}),
    skills: folds.skills.checkpoint(),
    stuck_steps: CHECKPOINT_STUCK_STEPS,
  };
}

/**
 * The lowest index of `events` (a suffix of the log) that a step may still read from any later end
 * of the log: `detectStuck` with up to `CHECKPOINT_STUCK_STEPS` steps from the run's start
 * (`runStart`, an index of `events`). A reader of a checkpoint taken at the end of `events` reads
 * the log from there.
 */
export function stepLookback(events: readonly Event[], runStart: number): number {
  return stuckLookback(events, CHECKPOINT_STUCK_STEPS, runStart);
}

const LlmEventValue = z.custom<LlmEvent>(
  (value) => isValidEvent(value) && isLlmEvent(value),
  'not a valid event the LLM reads',
);
const ActionValue = z.custom<ActionEvent>(
  (value) => isValidEvent(value) && value.type === 'action',
  'not a valid action',
);
const AgentSpecValue = z.custom<AgentSpecEvent>(
  (value) => isValidEvent(value) && value.type === 'agent_spec',
  'not a valid agent_spec event',
);
const McpToolsValue = z.custom<McpToolsEvent>(
  (value) => isValidEvent(value) && value.type === 'mcp_tools',
  'not a valid mcp_tools event',
);
const WorkspaceContextValue = z.custom<WorkspaceContextEvent>(
  (value) => isValidEvent(value) && value.type === 'workspace_context',
  'not a valid workspace_context event',
);
const SystemPromptValue = z.custom<SystemPromptEvent>(
  (value) => isValidEvent(value) && value.type === 'system_prompt',
  'not a valid system prompt',
);
const Count = z.number().int().nonnegative();
const Ids = z.array(z.string());

const ViewCheckpointSchema = z.strictObject({
  system_prompt: SystemPromptValue.optional(),
  unhandled_condensation_request: z.boolean(),
  batches: z.array(z.strictObject({ key: z.string(), action_ids: Ids, run: Count, loop: Count.optional() })),
  loops: z.array(z.strictObject({ id: Count, batch_keys: Ids })),
  results: z.record(z.string(), Ids),
  unmatched: z.array(z.union([z.string(), ActionValue])),
  latest_by_tool_call: z.record(z.string(), z.string()),
  run: Count,
  loop_count: Count,
  run_loop: Count.optional(),
  // the events first: nearly every item is one, and a union that tries a failing branch first pays for its issues
  items: z.array(
    z.union([
      LlmEventValue,
      z.strictObject({ type: z.literal('condensation_summary'), id: EventId, summary: z.string() }),
    ]),
  ),
}) satisfies z.ZodType<ViewCheckpoint>;

const ProgressCheckpointSchema = z.strictObject({
  status: ConversationStatus,
  pending: z.array(ActionValue),
  answered: Ids,
  started_by: z.record(z.string(), z.string()),
  condensation_requested: z.boolean(),
  finish_called: z.boolean(),
  prepare: z.strictObject({
    context_wanted: z.boolean(),
    context_read: z.boolean(),
    hook_points: Ids,
    session_started: z.boolean(),
    prompts: Ids,
    replied: z.boolean(),
    stop_answered: z.boolean(),
    stop_refused: z.boolean(),
    session_end_owed: z.boolean(),
  }),
  events: Count,
}) satisfies z.ZodType<ProgressCheckpoint>;

const RunStateCheckpointSchema = z.strictObject({
  status: ConversationStatus,
  since_run_start: Count,
  iterations: Count,
  spent_usd: z.number().nonnegative(),
  has_system_prompt: z.boolean(),
  tool_call_ids: Ids,
  response_ids: Ids,
}) satisfies z.ZodType<RunStateCheckpoint>;

const ConversationCheckpointSchema = z.strictObject({
  view: ViewCheckpointSchema,
  progress: ProgressCheckpointSchema,
  run: RunStateCheckpointSchema,
  spec: AgentSpecValue.optional(),
  mcp_tools: z.array(McpToolsValue).optional(),
  skills: z.strictObject({
    context: WorkspaceContextValue.optional(),
    activated: Ids,
    applied_rules: Ids,
  }) satisfies z.ZodType<SkillsCheckpoint>,
  stuck_steps: Count,
});

export type CheckpointParse =
  { readonly ok: true; readonly checkpoint: ConversationCheckpoint } | { readonly ok: false; readonly reason: string };

/**
 * A stored checkpoint, checked: its shape, and every event in it against the event schemas (as a
 * read of the log checks them). A value that is not one is refused with the reason; its reader
 * reads the log instead.
 */
export function parseConversationCheckpoint(value: unknown): CheckpointParse {
  const parsed = ConversationCheckpointSchema.safeParse(value);
  if (parsed.success) return { ok: true, checkpoint: parsed.data };
  return {
    ok: false,
    reason: parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; '),
  };
}
