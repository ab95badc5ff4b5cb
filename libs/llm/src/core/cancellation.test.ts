import { describe, expect, it } from 'vitest';
import {
  createTestLanguageModel,
  firstTurn,
  fixtureReply,
  loadFixture,
  startTestServer,
  type FixtureName,
  type TestProvider,
} from '../testing/index.js';

const CASES: readonly (readonly [TestProvider, FixtureName])[] = [
  ['openai-chat', 'openai-chat-tool-call'],
  ['openai-responses', 'openai-responses-tool-call'],
  ['anthropic', 'anthropic-tool-call'],
];

describe('cancellation', () => {
  it.each(CASES)('%s: aborting a slow stream rejects at once with code cancelled', async (provider, fixture) => {
    await using server = await startTestServer();
    server.enqueue(fixtureReply(loadFixture(fixture), { delayMs: 150 }));
    const model = createTestLanguageModel(provider, server);
    const controller = new AbortController();
    let abortedAt = 0;
    const deltas: string[] = [];
    const call = model.generate(
      { messages: firstTurn },
      {
        signal: controller.signal,
        onDelta: (delta) => {
          deltas.push(delta.type);
          if (abortedAt === 0) {
            abortedAt = performance.now();
            controller.abort();
          }
        },
      },
    );
    await expect(call).rejects.toMatchObject({ code: 'cancelled', isRetryable: false });
    expect(performance.now() - abortedAt).toBeLessThan(100);
    expect(deltas).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it('aborting while waiting for headers or during backoff rejects at once', async () => {
    await using server = await startTestServer();
    server.enqueue({ type: 'hang' });
    const model = createTestLanguageModel('openai-chat', server, { retry: { initialDelayMs: 10_000 } });
    const early = AbortSignal.timeout(50);
    const started = performance.now();
    await expect(model.generate({ messages: firstTurn }, { signal: early })).rejects.toMatchObject({
      code: 'cancelled',
    });
    expect(performance.now() - started).toBeLessThan(500);

    server.enqueue({ type: 'json', status: 503, body: { error: { message: 'busy', type: 'server_error' } } });
    const duringBackoff = AbortSignal.timeout(150);
    const backoffStarted = performance.now();
    await expect(model.generate({ messages: firstTurn }, { signal: duringBackoff })).rejects.toMatchObject({
      code: 'cancelled',
    });
    expect(performance.now() - backoffStarted).toBeLessThan(500);
  });

  it('rejects without calling the server when the signal is already aborted', async () => {
    await using server = await startTestServer();
    const model = createTestLanguageModel('anthropic', server);
    await expect(model.generate({ messages: firstTurn }, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: 'cancelled',
    });
    expect(server.requests).toHaveLength(0);
  });
});
