export { loadAgentSettings } from './agent-settings.js';
export { createStepHandler } from './step-handler.js';
export type { StepHandlerDependencies } from './step-handler.js';
export { createProjectHandler } from './project-handler.js';
export { ToolRunner, WORKSPACE_MOVED_NOTE, WORKSPACE_REBUILT_NOTE } from './tool-runner.js';
export type { ToolRunnerDependencies } from './tool-runner.js';
export { createCondenseHandler } from './condense-handler.js';
export type { CondenseHandlerDependencies } from './condense-handler.js';
