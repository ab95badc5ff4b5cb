import type { LlmConfig, ReasoningEffort } from './core/config.js';
import type { ProviderRequest } from './core/provider-adapter.js';
import { anthropicMessagesBody, type AnthropicSettings } from './providers/anthropic/anthropic-adapter.js';
import { isOfficialOpenAI } from './providers/openai-client.js';
import { chatCompletionsBody, type OpenAIChatSettings } from './providers/openai-chat/openai-chat-adapter.js';
import { responsesBody, type OpenAIResponsesSettings } from './providers/openai-responses/openai-responses-adapter.js';

const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;
const THINKING_BUDGETS: Record<ReasoningEffort, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576 };

/** What a provider's adapter is made with, from a model's configuration: the one place it is derived. */
export type ProviderSettings =
  | { readonly provider: 'openai-chat'; readonly settings: OpenAIChatSettings }
  | { readonly provider: 'openai-responses'; readonly settings: OpenAIResponsesSettings }
  | { readonly provider: 'anthropic'; readonly settings: AnthropicSettings };

export function providerSettings(config: LlmConfig, baseURL: string | undefined): ProviderSettings {
  const effort = config.reasoningEffort === undefined ? {} : { reasoningEffort: config.reasoningEffort };
  switch (config.provider) {
    case 'openai-chat':
      return {
        provider: config.provider,
        settings: { model: config.model, officialOpenAI: isOfficialOpenAI(baseURL), ...effort },
      };
    case 'openai-responses':
      return { provider: config.provider, settings: { model: config.model, ...effort } };
    case 'anthropic': {
      const budget =
        config.thinkingBudgetTokens ?? (config.reasoningEffort ? THINKING_BUDGETS[config.reasoningEffort] : undefined);
      return {
        provider: config.provider,
        settings: {
          model: config.model,
          maxOutputTokens: config.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
          promptCaching: config.promptCaching,
          ...(budget === undefined ? {} : { thinkingBudgetTokens: budget }),
        },
      };
    }
  }
}

/** The body the provider's adapter sends for `request`, byte for byte. */
export function providerBody(provider: ProviderSettings, request: ProviderRequest, stream: boolean): Buffer {
  switch (provider.provider) {
    case 'openai-chat':
      return chatCompletionsBody(provider.settings, request, stream);
    case 'openai-responses':
      return responsesBody(provider.settings, request, stream);
    case 'anthropic':
      return anthropicMessagesBody(provider.settings, request, stream);
  }
}
