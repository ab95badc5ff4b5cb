export { buildView, unmatchedActions, ViewBuilder } from './view-builder.js';
export type { ViewCheckpoint } from './view-builder.js';
export type { IndexState } from './log-index.js';
export { firstCuttableIndex, manipulationIndices, viewBlocks } from './manipulation-indices.js';
export type { ViewBlock } from './manipulation-indices.js';
export { ChatRenderer, toChatMessages, type RenderedChat } from './chat-messages.js';
export { hasThinking, isLlmEvent, isResultEvent, isToolItem } from './types.js';
export type { CondensationSummary, LlmEvent, ResultEvent, View, ViewItem } from './types.js';
export { planBranch, type BranchContext, type BranchPlan } from './branch.js';
