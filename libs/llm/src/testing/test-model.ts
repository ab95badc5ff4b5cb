import type { LlmConfigInput } from '../core/config.js';
import type { LanguageModel } from '../core/language-model.js';
import { createLanguageModel, type CreateLanguageModelOptions } from '../create-language-model.js';
import type { LlmTestServer } from './test-server.js';

export type TestProvider = 'openai-chat' | 'openai-responses' | 'anthropic';

const MODELS: Record<TestProvider, string> = {
  'openai-chat': 'gpt-4.1',
  'openai-responses': 'gpt-5',
  anthropic: 'claude-sonnet-4-6',
};

/** A model wired to a local test server, with fast retries so error tests run quickly. */
export function createTestLanguageModel(
  provider: TestProvider,
  server: LlmTestServer,
  overrides: Partial<LlmConfigInput> = {},
  options: CreateLanguageModelOptions = {},
): LanguageModel {
  const config: LlmConfigInput = {
    provider,
    model: MODELS[provider],
    baseURL: provider === 'anthropic' ? server.url : server.baseURL,
    apiKey: 'test-key',
    retry: { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 20, jitter: 0 },
    timeoutMs: 10_000,
    ...overrides,
  };
  return createLanguageModel(config, options);
}
