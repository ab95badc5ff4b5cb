import { defaultApiKeyVariable, loadApiKey, NO_API_KEY } from './core/api-key.js';
import { parseLlmConfig, type LlmConfig } from './core/config.js';
import type { GenerateRequest, LanguageModel } from './core/language-model.js';
import { silentLogger, type LlmLogger } from './core/logger.js';
import { ManagedLanguageModel } from './core/managed-language-model.js';
import type { ProviderAdapter } from './core/provider-adapter.js';
import { toProviderRequest } from './core/provider-request.js';
import { AnthropicAdapter, createAnthropicClient } from './providers/anthropic/anthropic-adapter.js';
import { createOpenAIClient } from './providers/openai-client.js';
import { OpenAIChatAdapter } from './providers/openai-chat/openai-chat-adapter.js';
import { OpenAIResponsesAdapter } from './providers/openai-responses/openai-responses-adapter.js';
import { providerBody, providerSettings } from './provider-settings.js';

export type CreateLanguageModelOptions = {
  /** Wins over `config.apiKey` and the environment. */
  readonly apiKey?: string;
  /** Wins over `config.baseURL`. */
  readonly baseURL?: string;
  /** Where `apiKeyEnv` (default the provider's variable) is looked up; defaults to `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: LlmLogger;
  readonly fetch?: typeof fetch;
  /** Jitter source for retry backoff. */
  readonly random?: () => number;
};

/** Validates `config` (fail fast) and builds the model for its provider. */
export function createLanguageModel(config: unknown, options: CreateLanguageModelOptions = {}): LanguageModel {
  const parsed = parseLlmConfig(config);
  const baseURL = options.baseURL ?? parsed.baseURL;
  const explicit = options.apiKey ?? parsed.apiKey;
  const apiKey =
    parsed.apiKeyEnv === false
      ? explicit || NO_API_KEY
      : loadApiKey({
          explicit,
          variable: parsed.apiKeyEnv ?? defaultApiKeyVariable(parsed.provider),
          env: options.env ?? process.env,
          provider: parsed.provider,
        });
  const client = {
    apiKey,
    ...(baseURL === undefined ? {} : { baseURL }),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
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
  const provider = providerSettings(config, baseURL);
  switch (provider.provider) {
    case 'openai-chat':
      return new OpenAIChatAdapter(createOpenAIClient(client), provider.settings);
    case 'openai-responses':
      return new OpenAIResponsesAdapter(createOpenAIClient(client), provider.settings);
    case 'anthropic':
      return new AnthropicAdapter(createAnthropicClient(client), provider.settings);
  }
}

/** A model call's request as its provider receives it: where it goes, and its body byte for byte. */
export type WireRequest = { readonly provider: LlmConfig['provider']; readonly model: string; readonly body: string };

/**
 * The body a model made by `createLanguageModel(config)` sends for `request` (each attempt the
 * same), built as its adapter builds it: for a replay of what a model was asked, without calling it.
 */
export function wireRequest(
  config: unknown,
  request: GenerateRequest,
  options: { readonly stream: boolean },
): WireRequest {
  const parsed = parseLlmConfig(config);
  const body = providerBody(
    providerSettings(parsed, parsed.baseURL),
    toProviderRequest(parsed, request),
    options.stream,
  );
  return { provider: parsed.provider, model: parsed.model, body: body.toString('utf8') };
}
