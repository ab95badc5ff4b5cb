export type * from './messages.js';
export { IMAGE_ESTIMATE_CHARACTERS } from './messages.js';
export {
  FinishReason,
  LlmProvider,
  emptyUsage,
  toAssistantMessage,
  type GenerateOptions,
  type GenerateRequest,
  type GenerateResult,
  type LanguageModel,
  type ModelFallback,
  type ModelInfo,
  type ModelName,
  type StreamDelta,
  type Usage,
} from './core/language-model.js';
export { LlmError, LlmErrorCode, OUTAGE_CODES, isLlmError, isOutage, type LlmErrorOptions } from './core/errors.js';
export { withFallbacks, type ChainedModel, type FallbackOptions, type FallbackTaken } from './core/fallbacks.js';
export { classifyError } from './core/classify-error.js';
export { imageNote, withStoredImages, type StoredImageSource } from './core/stored-images.js';
export { isContextOverflowMessage } from './core/context-overflow.js';
export { parseRetryAfterMs } from './core/retry-after.js';
export { backoffDelayMs } from './core/retry.js';
export { computeCostUsd, type Prices } from './core/cost.js';
export {
  LlmConfig,
  ModelPrices,
  ReasoningEffort,
  RetryPolicy,
  parseLlmConfig,
  type LlmConfigInput,
} from './core/config.js';
export { defaultApiKeyVariable, loadApiKey, NO_API_KEY, type ApiKeySource } from './core/api-key.js';
export { silentLogger, type LlmLogger } from './core/logger.js';
export { createHttpFetch, proxySettings, type ProxySettings } from './core/http-fetch.js';
export {
  createLanguageModel,
  wireRequest,
  type CreateLanguageModelOptions,
  type WireRequest,
} from './create-language-model.js';
export {
  ScriptedLanguageModel,
  type ScriptedLanguageModelOptions,
  type ScriptedReply,
} from './scripted-language-model.js';
export { renderToolPrompt } from './prompt-tools/tool-prompt.js';
export { parseToolCallText, type ParsedToolText } from './prompt-tools/parse-tool-calls.js';
export { findTextToolCall, type TextToolCall } from './prompt-tools/text-tool-calls.js';
export { toPromptToolMessages } from './prompt-tools/to-prompt-messages.js';
