import { toPromptToolMessages } from '../prompt-tools/to-prompt-messages.js';
import type { LlmConfig } from './config.js';
import type { GenerateRequest } from './language-model.js';
import type { ProviderRequest } from './provider-adapter.js';

/**
 * What a provider attempt is given for `request` under `config`: the configured defaults filled
 * in, and tools described in the prompt for a model without native tool calls. Pure: the same
 * config and request always give the same provider request (a replay rebuilds it so).
 */
export function toProviderRequest(config: LlmConfig, request: GenerateRequest): ProviderRequest {
  const tools = request.tools ?? [];
  const promptCacheKey = request.promptCacheKey ?? config.promptCacheKey;
  const maxOutputTokens = request.maxOutputTokens ?? config.maxOutputTokens;
  const temperature = request.temperature ?? config.temperature;
  return {
    messages: config.nativeToolCalling ? request.messages : toPromptToolMessages(request.messages, tools),
    tools: config.nativeToolCalling ? tools : [],
    ...(promptCacheKey !== undefined && config.promptCaching ? { promptCacheKey } : {}),
    ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    ...(temperature === undefined ? {} : { temperature }),
  };
}
