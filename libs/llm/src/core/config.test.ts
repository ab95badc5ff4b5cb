import { describe, expect, it } from 'vitest';
import { createLanguageModel } from '../create-language-model.js';
import { loadApiKey } from './api-key.js';
import { LlmConfig, parseLlmConfig } from './config.js';
import { computeCostUsd } from './cost.js';
import { createTestLanguageModel, firstTurn, fixtureReply, loadFixture, startTestServer } from '../testing/index.js';

describe('LlmConfig', () => {
  it('fills defaults and round-trips through JSON', () => {
    const config = parseLlmConfig({
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      apiKeyEnv: 'TEAM_ANTHROPIC_KEY',
    });
    expect(config).toMatchObject({
      nativeToolCalling: true,
      promptCaching: true,
      timeoutMs: 300_000,
      retry: { maxAttempts: 5 },
    });
    expect(LlmConfig.parse(JSON.parse(JSON.stringify(config)))).toEqual(config);
  });

  it('rejects invalid config with a clear invalid_config error', () => {
    expect(() => parseLlmConfig({ provider: 'gemini', model: '', temperature: 9 })).toThrow(
      expect.objectContaining({
        code: 'invalid_config',
        message: expect.stringMatching(/provider[\s\S]*model[\s\S]*temperature/),
      }),
    );
    expect(() => parseLlmConfig({ provider: 'openai-chat', model: 'gpt-4.1', apiKeyy: 'x' })).toThrow(/apiKeyy/);
  });
});

describe('API key precedence', () => {
  const env = { TEAM_KEY: 'from-env' };
  it('explicit option > environment variable > typed error naming the variable', () => {
    expect(loadApiKey({ explicit: 'explicit', variable: 'TEAM_KEY', env, provider: 'openai-chat' })).toBe('explicit');
    expect(loadApiKey({ variable: 'TEAM_KEY', env, provider: 'openai-chat' })).toBe('from-env');
    expect(() => loadApiKey({ variable: 'MISSING_KEY', env, provider: 'openai-chat' })).toThrow(
      expect.objectContaining({ code: 'invalid_config', message: expect.stringContaining('MISSING_KEY') }),
    );
  });

  it('createLanguageModel reads the default variable of the provider', () => {
    expect(() => createLanguageModel({ provider: 'anthropic', model: 'claude-sonnet-4-6' }, { env: {} })).toThrow(
      /ANTHROPIC_API_KEY/,
    );
    const model = createLanguageModel(
      { provider: 'openai-responses', model: 'gpt-5', contextWindow: 400_000 },
      { env: { OPENAI_API_KEY: 'k' } },
    );
    expect(model.info).toEqual({
      provider: 'openai-responses',
      model: 'gpt-5',
      nativeToolCalling: true,
      vision: true,
      contextWindow: 400_000,
    });
  });
});

describe('cost', () => {
  it('prices uncached input, cache reads, cache writes and output separately', () => {
    const usage = {
      inputTokens: 3_000_000,
      outputTokens: 1_000_000,
      cacheReadTokens: 1_000_000,
      cacheWriteTokens: 1_000_000,
      reasoningTokens: 0,
    };
    expect(
      computeCostUsd(usage, {
        inputPerMillion: 3,
        outputPerMillion: 15,
        cacheReadPerMillion: 0.3,
        cacheWritePerMillion: 3.75,
      }),
    ).toBeCloseTo(3 + 15 + 0.3 + 3.75);
    expect(computeCostUsd(usage, { inputPerMillion: 1, outputPerMillion: 2 })).toBeCloseTo(5);
  });

  it('is computed per call from configured prices, with latency', async () => {
    await using server = await startTestServer();
    server.enqueue(fixtureReply(loadFixture('anthropic-tool-call')));
    const prices = { inputPerMillion: 3, outputPerMillion: 15, cacheReadPerMillion: 0.3, cacheWritePerMillion: 3.75 };
    const result = await createTestLanguageModel('anthropic', server, { prices }).generate({ messages: firstTurn });
    // 176 uncached input, 1024 cache read, 58 output
    expect(result.costUsd).toBeCloseTo((176 * 3 + 1024 * 0.3 + 58 * 15) / 1_000_000, 12);
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    server.enqueue(fixtureReply(loadFixture('anthropic-tool-call')));
    const unpriced = await createTestLanguageModel('anthropic', server).generate({ messages: firstTurn });
    expect(unpriced.costUsd).toBeUndefined();
  });
});
