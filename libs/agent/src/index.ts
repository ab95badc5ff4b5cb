export { AgentConfig, ConfirmationPolicy, parseAgentConfig } from './agent-config.js';
export type { AgentConfigInput } from './agent-config.js';
export {
  AGENT_SPEC_VERSION,
  AgentSpec,
  agentConfigOf,
  describeIssues,
  fieldIssues,
  llmConfigOf,
  MAX_FALLBACKS,
  readAgentSpec,
  SpecFallback,
  SpecModel,
  specOfConfig,
  unreadableSpecDrafts,
} from './agent-spec.js';
export type { AgentSpecInput, SpecRead } from './agent-spec.js';
export { lastSpecEvent, SpecFold } from './spec-fold.js';
export { McpHttpServerSpec, McpServerSpec, McpServersSpec, McpStdioServerSpec, resolveMcpServer } from './mcp-spec.js';
export type { McpServerResolution } from './mcp-spec.js';
export { unlistedServers, withListedTools } from './mcp-tools-catalog.js';
export { AgentCatalog } from './spec-catalog.js';
export type { ResolvedSpec, SpecRequest, SubAgentSummary } from './spec-catalog.js';
export { AgentCatalogSettings, OperatorLimits, SpecPatch } from './catalog-settings.js';
export { DEFAULT_PROFILE } from './model-catalog.js';
export type { ProfileSummary } from './model-catalog.js';
export { SpecRefused } from './spec-checks.js';
export type { SpecIssue } from './spec-checks.js';
export { buildSystemPrompt, withAgentParameters } from './system-prompt.js';
export { SkillsConfig, skillsEnabledIn } from './skills-config.js';
export { appliedRulesOf, SkillsFold } from './skills-fold.js';
export type { SkillsCheckpoint } from './skills-fold.js';
export { parseSkillFile } from './skill-file.js';
export type { SkillFile } from './skill-file.js';
export {
  PATH_RULES_FILE,
  readWorkspaceContext,
  REPOSITORY_CONTEXT_FILES,
  SKILL_FOLDERS,
  WORKSPACE_CONTEXT_BOUNDS,
  workspaceContextDraft,
} from './workspace-context.js';
export type { WorkspaceContextPayload } from './workspace-context.js';
export { workspaceContextPrompt } from './skills-prompt.js';
export { skillActivationDraft } from './skill-activation.js';
export { actionPaths, withPathRules, workspaceRelative } from './path-rules.js';
export {
  CommandHook,
  HookCommand,
  HookMatcher,
  HOOK_EVENT_NAMES,
  HooksConfig,
  hookPointsIn,
  hooksFor,
  HttpHook,
} from './hooks-config.js';
export type { HookPoint } from './hooks-config.js';
export {
  failedHook,
  HOOK_OUTPUT_BOUNDS,
  hookExecutionDraft,
  hookInput,
  hookMessageDraft,
  hookOutcome,
} from './hook-outcome.js';
export type { HookOutcome } from './hook-outcome.js';
export { PrepareDuty } from './prepare-duty.js';
export type { PrepareCheckpoint, PrepareNeeds } from './prepare-duty.js';
export { hookRejectionDraft, prepareDrafts } from './prepare-answer.js';
export type { HookRun, PrepareInput } from './prepare-answer.js';
export { withToolHooks } from './tool-hooks.js';
export { DEFAULT_STUCK_THRESHOLDS, StuckReason, detectStuck, stuckStepsNeeded } from './stuck-detector.js';
export type { StuckThresholds } from './stuck-detector.js';
export { currentStatus, runState, RunStateFold } from './run-state.js';
export type { RunState, RunStateCheckpoint } from './run-state.js';
export { pendingActions } from './pending-actions.js';
export { ConversationProgress } from './progress.js';
export type { NextWork, NextWorkOptions, PendingActions, ProgressCheckpoint } from './progress.js';
export { nextWork, stepNeverDueAfter } from './next-work.js';
export { registryCatalog } from './tool-catalog.js';
export {
  DEFAULT_MAX_SUB_AGENT_DEPTH,
  DEFAULT_MAX_SUB_AGENTS,
  parseSubAgentMarkdown,
  SubAgentDefinition,
  SubAgentWorkspace,
  TASK_TOOL,
} from './sub-agents.js';
export type { SubAgentMarkdown, SubAgentMarkdownRead } from './sub-agents.js';
export { specTools, TaskInput, taskToolSpec, withTaskTool } from './task-tool.js';
export { childConversationId, childSpec } from './child-spec.js';
export { DelegationFold } from './delegation-fold.js';
export type { StartedChild } from './delegation-fold.js';
export {
  answerDrafts,
  childDone,
  childDrafts,
  planDelegations,
  startedDrafts,
  steerChild,
  SUBAGENT_ANSWER_CHARS,
} from './delegation.js';
export type {
  AcceptedDelegation,
  ChildInput,
  ChildState,
  DelegationPlan,
  PlanInput,
  Steering,
  WaitedChild,
} from './delegation.js';
export type { CheckedInput, ToolCatalog } from './tool-catalog.js';
export { toolCallEvents, toReasoning } from './tool-call-events.js';
export { needsConfirmation } from './confirmation.js';
export {
  assessActions,
  CommandRule,
  confirmationReason,
  highestRisk,
  PathRule,
  ruleFindings,
  SecurityAnalyzerName,
  SecurityConfig,
  SecurityRules,
} from './security-analyzer.js';
export type { SecurityAssessment, SecurityFinding } from './security-analyzer.js';
export { DEFAULT_COMMAND_RULES, DEFAULT_PATH_RULES } from './security-rules.js';
export type { CommandRuleScope, CommandRuleSpec, PathRuleSpec, RuleRisk } from './security-rules.js';
export { FINISH_TOOL, finishDrafts } from './finish.js';
export { estimateTokens, messageCharacters, tokensOf } from './token-estimate.js';
export { step, StepOutcome } from './step.js';
export { offeredTools, STEP_STREAMS, stepRequest } from './step-request.js';
export type { StepRequest, StepRequestInput } from './step-request.js';
export { checkRequests, replayRequests, ReplayError } from './replay.js';
export type { RecordedModelRequest, ReplayedRequest, ReplayOptions, RequestCheck } from './replay.js';
export type { StepInput, StepResult } from './step.js';
export { executeActions, interruptedDrafts, INTERRUPTED_MESSAGE } from './execute-actions.js';
export type { AroundAction } from './execute-actions.js';
export { LocalConversation } from './local-conversation.js';
export type { Condenser, LocalConversationOptions, RunOptions } from './local-conversation.js';
export { CONDENSATION_ATTEMPT_FAILED, condenseOrFail, failedCondensationAttempts } from './condense-or-fail.js';
export {
  approveCommand,
  CommandRefused,
  interruptCommand,
  interruptForMessage,
  messageCommand,
  pauseCommand,
  rejectCommand,
  runCommand,
} from './commands.js';
export type { CommandState } from './commands.js';
export {
  CHECKPOINT_STUCK_STEPS,
  checkpointFolds,
  foldLoaded,
  parseConversationCheckpoint,
  resumeFolds,
  stepLookback,
} from './conversation-checkpoint.js';
export type { CheckpointParse, ConversationCheckpoint, StepFolds } from './conversation-checkpoint.js';
export { stepStandsAfter } from './step-stands.js';
export {
  GENERATED_TITLE_REASON,
  messageText,
  onlyTitles,
  TITLE_FAILED,
  TitleProgress,
  titleWork,
} from './title-progress.js';
export type { TitleWork } from './title-progress.js';
export {
  cleanTitle,
  MAX_TITLE_CHARS,
  TITLE_MESSAGE_CHARS,
  TITLE_SYSTEM_PROMPT,
  titleRequest,
} from './title-request.js';
export { titleOrFail } from './title-or-fail.js';
export type { TitleResult } from './title-or-fail.js';
