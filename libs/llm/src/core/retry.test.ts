import { describe, expect, it } from 'vitest';
import {
  createTestLanguageModel,
  errorReply,
  firstTurn,
  fixtureReply,
  loadErrorBody,
  loadFixture,
  startTestServer,
} from '../testing/index.js';
import { backoffDelayMs } from './retry.js';
import { RetryPolicy } from './config.js';
import { LlmError } from './errors.js';

const request = { messages: firstTurn };

describe('retries through the real SDKs', () => {
  it('retries a 429 and waits for its Retry-After (seconds)', async () => {
    await using server = await startTestServer();
    server.enqueue(
      errorReply(429, loadErrorBody('anthropic', 'rate_limit'), { 'retry-after': '1' }),
      fixtureReply(loadFixture('anthropic-tool-call')),
    );
    const model = createTestLanguageModel('anthropic', server);
    const started = performance.now();
    const result = await model.generate(request);
    const elapsed = performance.now() - started;
    expect(result.attempts).toBe(2);
    expect(server.requests).toHaveLength(2);
    // The configured backoff is 5 ms: only Retry-After explains a ~1 s wait.
    expect(elapsed).toBeGreaterThanOrEqual(950);
  });

  it('prefers retry-after-ms over Retry-After', async () => {
    await using server = await startTestServer();
    server.enqueue(
      errorReply(429, loadErrorBody('openai', 'rate_limit'), { 'retry-after-ms': '300', 'retry-after': '30' }),
      fixtureReply(loadFixture('openai-chat-tool-call')),
    );
    const model = createTestLanguageModel('openai-chat', server);
    const started = performance.now();
    await model.generate(request);
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(5_000);
  });

  it('does not wait for a Retry-After longer than maxRetryAfterMs', async () => {
    await using server = await startTestServer();
    server.enqueue(errorReply(429, loadErrorBody('openai', 'rate_limit'), { 'retry-after': '3600' }));
    const model = createTestLanguageModel('openai-responses', server);
    const error = await model.generate(request).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'rate_limit', isRetryable: true, retryAfterMs: 3_600_000, status: 429 });
    expect(server.requests).toHaveLength(1);
  });

  it.each(['openai-chat', 'openai-responses', 'anthropic'] as const)(
    '%s: retries a 500 and succeeds',
    async (provider) => {
      await using server = await startTestServer();
      const fixture = {
        'openai-chat': 'openai-chat-tool-call',
        'openai-responses': 'openai-responses-tool-call',
        anthropic: 'anthropic-tool-call',
      } as const;
      const family = provider === 'anthropic' ? 'anthropic' : 'openai';
      server.enqueue(
        errorReply(500, loadErrorBody(family, 'server_error')),
        fixtureReply(loadFixture(fixture[provider])),
      );
      const result = await createTestLanguageModel(provider, server).generate(request, { stream: true });
      expect(result.attempts).toBe(2);
      expect(result.toolCalls).toHaveLength(2);
    },
  );

  it('gives up after maxAttempts with the last retryable error', async () => {
    await using server = await startTestServer();
    const overloaded = errorReply(529, loadErrorBody('anthropic', 'overloaded'));
    server.enqueue(overloaded, overloaded, overloaded);
    const error = await createTestLanguageModel('anthropic', server)
      .generate(request)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmError);
    expect(error).toMatchObject({ code: 'transient', status: 529, isRetryable: true });
    expect(server.requests).toHaveLength(3);
  });

  it.each(['openai-chat', 'anthropic'] as const)(
    '%s: a 401 is not retried and is classified auth',
    async (provider) => {
      await using server = await startTestServer();
      server.enqueue(errorReply(401, loadErrorBody(provider === 'anthropic' ? 'anthropic' : 'openai', 'auth')));
      const error = await createTestLanguageModel(provider, server)
        .generate(request)
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'auth', isRetryable: false, status: 401 });
      expect(server.requests).toHaveLength(1);
    },
  );

  it('classifies insufficient_quota 429 as quota and does not retry it', async () => {
    await using server = await startTestServer();
    server.enqueue(errorReply(429, loadErrorBody('openai', 'insufficient_quota')));
    const error = await createTestLanguageModel('openai-chat', server)
      .generate(request)
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'quota', isRetryable: false });
    expect(server.requests).toHaveLength(1);
  });

  it('retries a dropped connection', async () => {
    await using server = await startTestServer();
    server.enqueue({ type: 'drop' }, fixtureReply(loadFixture('openai-chat-tool-call')));
    const result = await createTestLanguageModel('openai-chat', server).generate(request);
    expect(result.attempts).toBe(2);
  });

  it('times out a hanging attempt with code timeout, then retries it', async () => {
    await using server = await startTestServer();
    server.enqueue({ type: 'hang' }, fixtureReply(loadFixture('anthropic-tool-call')));
    const result = await createTestLanguageModel('anthropic', server, { timeoutMs: 200 }).generate(request);
    expect(result.attempts).toBe(2);

    server.enqueue({ type: 'hang' });
    const model = createTestLanguageModel('anthropic', server, { timeoutMs: 100, retry: { maxAttempts: 1 } });
    await expect(model.generate(request)).rejects.toMatchObject({ code: 'timeout', isRetryable: true });
  });

  it('emits a restart delta when a stream fails after deltas were emitted', async () => {
    await using server = await startTestServer();
    const fixture = loadFixture('openai-chat-tool-call');
    server.enqueue(
      {
        type: 'raw',
        body: `data: ${JSON.stringify(fixture.stream[1])}\n\ndata: {"error":{"message":"The server had an error","type":"server_error"}}\n\n`,
      },
      fixtureReply(fixture),
    );
    const kinds: string[] = [];
    const result = await createTestLanguageModel('openai-chat', server).generate(request, {
      onDelta: (delta) => kinds.push(delta.type),
    });
    expect(result.attempts).toBe(2);
    expect(kinds.slice(0, 2)).toEqual(['text', 'restart']);
  });
});

describe('backoffDelayMs', () => {
  it('grows exponentially, is capped and jittered downwards', () => {
    const policy = RetryPolicy.parse({ initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2, jitter: 0.5 });
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelayMs(policy, attempt, () => 0))).toEqual([
      100, 200, 400, 800, 1000,
    ]);
    expect(backoffDelayMs(policy, 2, () => 1)).toBe(100);
  });
});
