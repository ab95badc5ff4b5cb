import { defaultApiKeyVariable, loadApiKey } from './core/api-key.js';
import { parseLlmConfig, type LlmConfig, type ReasoningEffort } from './core/config.js';
import type { LanguageModel } from './core/language-model.js';
import { silentLogger, type LlmLogger } from './core/logger.js';
import { ManagedLanguageModel } from './core/managed-language-model.js';
import type { ProviderAdapter } from './core/provider-adapter.js';
import { AnthropicAdapter, createAnthropicClient } from './providers/anthropic/anthropic-adapter.js';
import { createOpenAIClient, isOfficialOpenAI } from './providers/openai-client.js';
import { OpenAIChatAdapter } from './providers/openai-chat/openai-chat-adapter.js';
import { OpenAIResponsesAdapter } from './providers/openai-responses/openai-responses-adapter.js';

export type CreateLanguageModelOptions = {
  /** Wins over `config.apiKey` and the environment. */
  readonly apiKey?: string;
  /** Wins over `config.baseURL`. */
  readonly baseURL?: string;
  /** Where `apiKeyEnv` is looked up; defaults to `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: LlmLogger;
  readonly fetch?: typeof fetch;
  /** Jitter source for retry backoff. */
  readonly random?: () => number;
};

const DEFAULT_ANTHROPIC_MAX_TOKENS = 8192;
const THINKING_BUDGETS: Record<ReasoningEffort, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24_576 };

/** Validates `config` (fail fast) and builds the model for its provider. */
export function createLanguageModel(config: unknown, options: CreateLanguageModelOptions = {}): LanguageModel {
  const parsed = parseLlmConfig(config);
  const baseURL = options.baseURL ?? parsed.baseURL;
  const apiKey = loadApiKey({
    explicit: options.apiKey ?? parsed.apiKey,
    variable: parsed.apiKeyEnv ?? defaultApiKeyVariable(parsed.provider),
    env: options.env ?? process.env,
    provider: parsed.provider,
  });
  const client = { apiKey, ...(baseURL === undefined ? {} : { baseURL }), ...(options.fetch ? { fetch: options.fetch } : {}) };
  return new ManagedLanguageModel({
    adapter: createAdapter(parsed, client, baseURL),
    config: parsed,
    logger: options.logger ?? silentLogger,
    ...(options.random ? { random: options.random } : {}),
  });
}

function createAdapter(
  config: LlmConfig,
  client: { apiKey: string; baseURL?: string; fetch?: typeof fetch },
  baseURL: string | undefined,
): ProviderAdapter {
  const effort = config.reasoningEffort === undefined ? {} : { reasoningEffort: config.reasoningEffort };
  switch (config.provider) {
    case 'openai-chat':
      return new OpenAIChatAdapter(createOpenAIClient(client), {
        model: config.model,
        officialOpenAI: isOfficialOpenAI(baseURL),
        ...effort,
      });
    case 'openai-responses':
      return new OpenAIResponsesAdapter(createOpenAIClient(client), { model: config.model, ...effort });
    case 'anthropic': {
      const budget =
        config.thinkingBudgetTokens ?? (config.reasoningEffort ? THINKING_BUDGETS[config.reasoningEffort] : undefined);
      return new AnthropicAdapter(createAnthropicClient(client), {
        model: config.model,
        maxOutputTokens: config.maxOutputTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
        promptCaching: config.promptCaching,
        ...(budget === undefined ? {} : { thinkingBudgetTokens: budget }),
      });
    }
  }
}
