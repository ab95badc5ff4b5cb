export { checkModelAccess, loadAgentCatalog, loadAgentSettings, NO_KEY_VARIABLE } from './agent-settings.js';
export { ConversationAgents } from './conversation-agents.js';
export { fallbackReporter, OWN_MODEL_LABEL } from './fallback-reporter.js';
export type {
  AgentLookup,
  ConversationAgent,
  ConversationAgentsOptions,
  ImageReader,
  KeySecrets,
} from './conversation-agents.js';
export { createStepHandler } from './step-handler.js';
export type { StepHandlerDependencies } from './step-handler.js';
export type { CondenserWakeupSink } from './condenser-waker.js';
export { createProjectHandler } from './project-handler.js';
export { CheckpointWriter, withCheckpoints } from './checkpoint-writer.js';
export type { CheckpointOutcome, CheckpointWriterOptions, CommitNote } from './checkpoint-writer.js';
export { ToolRunner } from './tool-runner.js';
export { WORKSPACE_MOVED_NOTE, WORKSPACE_REBUILT_NOTE } from './workspace-notes.js';
export type { ToolRunnerDependencies } from './tool-runner-dependencies.js';
export { Delegator } from './delegator.js';
export type { DelegatorDependencies } from './delegator.js';
export { createCondenseHandler } from './condense-handler.js';
export type { CondenseHandlerDependencies } from './condense-handler.js';
export { CondensationWaits } from './condensation-waits.js';
export type { CondensationWaitsOptions, OverdueWait } from './condensation-waits.js';
export {
  ASK_PART_HEADER,
  AskFailure,
  AskRequest,
  AskResult,
  serveQuestions,
  type AskPart,
  type QuestionServerDependencies,
} from './ask.js';
