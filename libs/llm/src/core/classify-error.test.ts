import { describe, expect, it } from 'vitest';
import {
  createTestLanguageModel,
  errorReply,
  firstTurn,
  loadErrorBody,
  startTestServer,
  type TestProvider,
} from '../testing/index.js';
import { classifyError } from './classify-error.js';
import { isContextOverflowMessage } from './context-overflow.js';
import { parseRetryAfterMs } from './retry-after.js';

const OVERFLOWS: readonly (readonly [string, TestProvider, Parameters<typeof loadErrorBody>])[] = [
  ['OpenAI Chat Completions', 'openai-chat', ['openai', 'context_overflow_chat']],
  ['OpenAI Responses', 'openai-responses', ['openai', 'context_overflow_responses']],
  ['Anthropic', 'anthropic', ['anthropic', 'context_overflow']],
  ['vLLM', 'openai-chat', ['vllm', 'context_overflow']],
  ['llama.cpp', 'openai-chat', ['llama_cpp', 'context_overflow']],
];

describe('error classification', () => {
  it.each(OVERFLOWS)(
    '%s context overflow is context_window_exceeded and not retried',
    async (_name, provider, [family, kind]) => {
      await using server = await startTestServer();
      server.enqueue(errorReply(400, loadErrorBody(family, kind)));
      const error = await createTestLanguageModel(provider, server)
        .generate({ messages: firstTurn })
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'context_window_exceeded', isRetryable: false, status: 400, provider });
      expect(server.requests).toHaveLength(1);
    },
  );

  it('maps statuses to codes', () => {
    const status = (code: number, message = 'x'): string =>
      classifyError(Object.assign(new Error(message), { status: code, headers: new Headers(), error: {} }), 'p').code;
    expect([400, 401, 403, 404, 408, 409, 413, 429, 500, 503, 529].map((code) => status(code))).toEqual([
      'bad_request',
      'auth',
      'permission',
      'not_found',
      'timeout',
      'transient',
      'context_window_exceeded',
      'rate_limit',
      'transient',
      'transient',
      'transient',
    ]);
    expect(
      status(400, 'Invalid prompt: your prompt was flagged as potentially violating our usage policy (content_filter)'),
    ).toBe('content_filter');
  });

  it('classifies errors sent inside a stream by their type', () => {
    const streamed = (body: unknown): string =>
      classifyError(
        Object.assign(new Error('stream'), { status: undefined, headers: new Headers(), error: body }),
        'anthropic',
      ).code;
    expect(streamed({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })).toBe('transient');
    expect(streamed({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } })).toBe('rate_limit');
  });

  it('recognises context overflow wording of several servers, but not rate limits', () => {
    expect(
      isContextOverflowMessage('The decoder prompt (length 9000) is longer than the maximum model length of 8192.'),
    ).toBe(true);
    expect(isContextOverflowMessage('input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000')).toBe(
      true,
    );
    expect(isContextOverflowMessage('Rate limit reached for gpt-4.1 on tokens per min (TPM). Input tokens: 5000')).toBe(
      false,
    );
  });

  it('parses retry-after-ms, Retry-After seconds and HTTP dates', () => {
    expect(parseRetryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(parseRetryAfterMs(new Headers({ 'retry-after': '2' }))).toBe(2000);
    const now = Date.parse('2025-07-03T10:00:00Z');
    expect(parseRetryAfterMs(new Headers({ 'retry-after': 'Thu, 03 Jul 2025 10:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfterMs(new Headers())).toBeUndefined();
  });
});
