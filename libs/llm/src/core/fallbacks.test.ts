import { describe, expect, it } from 'vitest';
import {
  createTestLanguageModel,
  errorReply,
  firstTurn,
  fixtureReply,
  loadErrorBody,
  loadFixture,
  readFileTool,
  startTestServer,
  type HttpReply,
  type LlmTestServer,
  type SseEvent,
  type TestProvider,
} from '../testing/index.js';
import { isLlmError, isOutage, LlmError, type LlmErrorCode } from './errors.js';
import { withFallbacks, type FallbackTaken } from './fallbacks.js';
import type { StreamDelta } from './language-model.js';

// Each provider's failures come from a local server speaking its wire protocol, read by its
// official SDK: what moves a call to a fallback is what the SDK and the classification make of them.

const request = { messages: firstTurn, tools: [readFileTool] };
const retry = { maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 5, jitter: 0 };
const ANSWER = {
  'openai-chat': 'openai-chat-tool-call',
  'openai-responses': 'openai-responses-tool-call',
  anthropic: 'anthropic-tool-call',
} as const;
const chunk = (delta: unknown): SseEvent => ({
  data: {
    id: 'chatcmpl-cut',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'gpt-4.1',
    choices: [{ index: 0, delta, finish_reason: null }],
  },
});

async function failure(call: Promise<unknown>): Promise<LlmError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isLlmError(error)) throw new Error(`expected an LlmError, got ${String(error)}`);
  return error;
}

/** A primary on `primary`'s server and the `backup` profile on `backup`'s, with every fallback taken kept. */
function chain(primary: { provider: TestProvider; server: LlmTestServer; timeoutMs?: number }, backup: LlmTestServer) {
  const taken: FallbackTaken[] = [];
  const model = withFallbacks(
    {
      model: createTestLanguageModel(primary.provider, primary.server, {
        retry,
        model: 'primary-model',
        ...(primary.timeoutMs ? { timeoutMs: primary.timeoutMs } : {}),
      }),
      profile: 'primary',
    },
    [{ model: createTestLanguageModel('openai-chat', backup, { retry, model: 'backup-model' }), profile: 'backup' }],
    { onFallback: (fallback) => taken.push(fallback) },
  );
  return { model, taken };
}

/** An outage as a provider shows it, for every attempt of a call; `attempts`: how many the primary's policy makes of it. */
const OUTAGES: readonly (readonly [string, TestProvider, HttpReply, LlmErrorCode, number])[] = [
  ['a 503 (OpenAI)', 'openai-chat', errorReply(503, loadErrorBody('openai', 'server_error')), 'transient', 2],
  [
    'a 429 with retry-after-ms (OpenAI Responses)',
    'openai-responses',
    errorReply(429, loadErrorBody('openai', 'rate_limit'), { 'retry-after-ms': '10' }),
    'rate_limit',
    2,
  ],
  [
    'a 529 overloaded (Anthropic)',
    'anthropic',
    errorReply(529, loadErrorBody('anthropic', 'overloaded')),
    'transient',
    2,
  ],
  [
    'a 429 asking for an hour (not waited for)',
    'anthropic',
    errorReply(429, loadErrorBody('anthropic', 'rate_limit'), { 'retry-after': '3600' }),
    'rate_limit',
    1,
  ],
  [
    'no quota left (not retried)',
    'openai-chat',
    errorReply(429, loadErrorBody('openai', 'insufficient_quota')),
    'quota',
    1,
  ],
  ['a connection cut without an answer', 'openai-chat', { type: 'drop' }, 'transient', 2],
  ['a server that never answers (the per-attempt timeout)', 'openai-chat', { type: 'hang' }, 'timeout', 2],
];

describe('a model with fallbacks', () => {
  it.each(OUTAGES)(
    'after its retries, %s moves the call to the fallback, which says it made it',
    async (_name, provider, outage, code, attempts) => {
      await using primary = await startTestServer();
      await using backup = await startTestServer();
      primary.enqueue(outage, outage);
      backup.enqueue(fixtureReply(loadFixture('openai-chat-tool-call')));
      const { model, taken } = chain({ provider, server: primary, timeoutMs: 300 }, backup);

      const result = await model.generate(request, { stream: true });
      expect(new Set(result.toolCalls.map((call) => call.name))).toEqual(new Set(['read_file']));
      expect(result.fallback).toEqual({ index: 0, provider: 'openai-chat', model: 'backup-model', profile: 'backup' });
      expect(primary.requests).toHaveLength(attempts);
      expect(backup.requests).toHaveLength(1);
      expect((backup.requests[0]!.body as { model: string }).model).toBe('backup-model');
      expect(taken).toHaveLength(1);
      expect(taken[0]).toMatchObject({
        from: { provider, model: 'primary-model', profile: 'primary' },
        to: { provider: 'openai-chat', model: 'backup-model', profile: 'backup' },
        error: { code },
      });
      expect(model.info).toMatchObject({ provider, model: 'primary-model' });
    },
  );

  it('is the primary alone while its provider answers: no fallback named, none called', async () => {
    await using primary = await startTestServer();
    await using backup = await startTestServer();
    primary.enqueue(
      errorReply(500, loadErrorBody('anthropic', 'server_error')),
      fixtureReply(loadFixture('anthropic-tool-call')),
    );
    const { model, taken } = chain({ provider: 'anthropic', server: primary }, backup);
    const result = await model.generate(request);
    expect(result.fallback).toBeUndefined();
    expect(result.attempts).toBe(2);
    expect(backup.requests).toEqual([]);
    expect(taken).toEqual([]);
  });

  it.each([
    ['a key refused', errorReply(401, loadErrorBody('openai', 'auth')), 'auth'],
    [
      'a context too long',
      errorReply(400, loadErrorBody('openai', 'context_overflow_chat')),
      'context_window_exceeded',
    ],
    [
      'a request refused',
      errorReply(400, { error: { message: "Invalid value for 'tool_choice'.", type: 'invalid_request_error' } }),
      'bad_request',
    ],
    [
      'a model that does not exist',
      errorReply(404, {
        error: {
          message: 'The model `primary-model` does not exist.',
          type: 'invalid_request_error',
          code: 'model_not_found',
        },
      }),
      'not_found',
    ],
  ] as const)(
    'fails as it is on %s: the fallback would fail alike, or it is the operator’s to fix',
    async (_name, reply, code) => {
      await using primary = await startTestServer();
      await using backup = await startTestServer();
      primary.enqueue(reply);
      const { model, taken } = chain({ provider: 'openai-chat', server: primary }, backup);
      const error = await failure(model.generate(request));
      expect(error.code).toBe(code);
      expect(isOutage(error)).toBe(false);
      expect(primary.requests).toHaveLength(1);
      expect(backup.requests).toEqual([]);
      expect(taken).toEqual([]);
    },
  );

  it('tries each fallback in turn, each with its own retries, and fails with the last failure when every provider is out', async () => {
    await using primary = await startTestServer();
    await using second = await startTestServer();
    await using third = await startTestServer();
    const unavailable = errorReply(503, loadErrorBody('openai', 'server_error'));
    const limited = errorReply(429, loadErrorBody('anthropic', 'rate_limit'), { 'retry-after-ms': '5' });
    primary.enqueue(unavailable, unavailable);
    second.enqueue(unavailable, unavailable);
    third.enqueue(limited, limited);
    const taken: FallbackTaken[] = [];
    const model = withFallbacks(
      { model: createTestLanguageModel('openai-chat', primary, { retry }) },
      [
        { model: createTestLanguageModel('openai-responses', second, { retry }), profile: 'second' },
        { model: createTestLanguageModel('anthropic', third, { retry }), profile: 'third' },
      ],
      { onFallback: (fallback) => taken.push(fallback) },
    );
    const error = await failure(model.generate(request));
    expect(error).toMatchObject({ code: 'rate_limit', provider: 'anthropic', status: 429 });
    expect([primary.requests.length, second.requests.length, third.requests.length]).toEqual([2, 2, 2]);
    expect(taken.map(({ from, to, error: cause }) => [from.profile ?? from.provider, to.profile, cause.code])).toEqual([
      ['openai-chat', 'second', 'transient'],
      ['second', 'third', 'transient'],
    ]);
  });

  it('moves on from the fallback that is out to the next, and names the one that made the call by its index', async () => {
    await using primary = await startTestServer();
    await using second = await startTestServer();
    await using third = await startTestServer();
    const unavailable = errorReply(503, loadErrorBody('openai', 'server_error'));
    primary.enqueue(unavailable, unavailable);
    second.enqueue(unavailable, unavailable);
    third.enqueue(fixtureReply(loadFixture(ANSWER['openai-responses'])));
    const model = withFallbacks(
      { model: createTestLanguageModel('openai-chat', primary, { retry }), profile: 'first' },
      [
        { model: createTestLanguageModel('openai-chat', second, { retry }), profile: 'second' },
        { model: createTestLanguageModel('openai-responses', third, { retry, model: 'gpt-5-mini' }) },
      ],
    );
    const result = await model.generate(request);
    expect(result.fallback).toEqual({ index: 1, provider: 'openai-responses', model: 'gpt-5-mini' });
  });

  it('withdraws what a model streamed before its provider failed, then streams the fallback’s reply', async () => {
    await using primary = await startTestServer();
    await using backup = await startTestServer();
    // a stream that starts, then stalls past the attempt's timeout
    primary.enqueue({
      type: 'endless-sse',
      first: [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Half an ans' })],
      next: () => chunk({ content: 'w' }),
      delayMs: 2_000,
    });
    backup.enqueue(fixtureReply(loadFixture('openai-chat-tool-call')));
    const model = withFallbacks(
      { model: createTestLanguageModel('openai-chat', primary, { retry: { maxAttempts: 1 }, timeoutMs: 400 }) },
      [{ model: createTestLanguageModel('openai-chat', backup, { retry }), profile: 'backup' }],
    );
    const deltas: StreamDelta[] = [];
    const result = await model.generate(request, { onDelta: (delta) => deltas.push(delta) });
    expect(result.fallback?.profile).toBe('backup');
    const restart = deltas.findIndex((delta) => delta.type === 'restart');
    expect(deltas.slice(0, restart)).toContainEqual({ type: 'text', text: 'Half an ans' });
    expect(deltas[restart]).toEqual({ type: 'restart', attempt: 2 });
    expect(deltas.slice(restart + 1).some((delta) => delta.type === 'tool_call')).toBe(true);
    expect(deltas.filter((delta) => delta.type === 'restart')).toHaveLength(1);
  });

  it('never moves a cancelled call on', async () => {
    await using primary = await startTestServer();
    await using backup = await startTestServer();
    primary.enqueue({ type: 'hang' });
    const { model } = chain({ provider: 'openai-chat', server: primary }, backup);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('interrupted')), 100);
    const error = await failure(model.generate(request, { signal: controller.signal }));
    expect(error.code).toBe('cancelled');
    expect(backup.requests).toEqual([]);
  });

  it('is the model itself without fallbacks', () => {
    const model = createTestLanguageModel('openai-chat', {
      url: 'http://127.0.0.1:9',
      baseURL: 'http://127.0.0.1:9/v1',
    } as LlmTestServer);
    expect(withFallbacks({ model }, [])).toBe(model);
    expect(isOutage(new LlmError('invalid_config', 'no key'))).toBe(false);
  });
});
