import { describe, expect, it } from 'vitest';
import { createTestLanguageModel, firstTurn, readFileTool, startTestServer, type SseEvent } from '../testing/index.js';
import { isLlmError, type LlmError } from './errors.js';
import { MAX_WHOLE_RESPONSE_BYTES } from './http-fetch.js';

const chunk = (delta: unknown): SseEvent => ({
  data: {
    id: 'chatcmpl-endless',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'gpt-4.1',
    choices: [{ index: 0, delta, finish_reason: null }],
  },
});
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function failure(call: Promise<unknown>): Promise<LlmError> {
  const error = await call.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isLlmError(error)) throw new Error(`expected an LlmError, got ${String(error)}`);
  return error;
}

/** Streams that never end, over the real Chat Completions SSE protocol, read by the official SDK. */
describe('a reply that never ends', () => {
  it('fails with reply_too_large past llm.maxReplyChars, is not retried, and closes the stream', async () => {
    await using server = await startTestServer();
    let written = 0;
    server.enqueue({
      type: 'endless-sse',
      first: [chunk({ role: 'assistant', content: '' })],
      next: (index) => {
        written = index + 1;
        return chunk({ content: 'x'.repeat(1_000) });
      },
    });
    const model = createTestLanguageModel('openai-chat', server, { maxReplyChars: 50_000 });
    let seen = 0;
    const error = await failure(
      model.generate(
        { messages: firstTurn, tools: [readFileTool] },
        { onDelta: (delta) => void (seen += delta.type === 'text' ? delta.text.length : 0) },
      ),
    );
    expect(error.code).toBe('reply_too_large');
    expect(error.isRetryable).toBe(false);
    expect(error.message).toContain('50000 characters (llm.maxReplyChars)');
    expect(server.requests).toHaveLength(1);
    // the caller never saw more than the bound
    expect(seen).toBeLessThanOrEqual(50_000);
    // the connection was closed: the server stops writing soon after
    await sleep(200);
    const after = written;
    await sleep(300);
    expect(written).toBe(after);
  });

  it('counts tool-call arguments the same way, and a stream forced on without a delta listener', async () => {
    await using server = await startTestServer();
    server.enqueue({
      type: 'endless-sse',
      first: [
        chunk({
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '' } }],
        }),
      ],
      next: () =>
        chunk({
          tool_calls: [
            {
              index: 0,
              function: { arguments: '{"path":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' },
            },
          ],
        }),
    });
    const model = createTestLanguageModel('openai-chat', server, { maxReplyChars: 20_000 });
    const error = await failure(model.generate({ messages: firstTurn, tools: [readFileTool] }, { stream: true }));
    expect(error.code).toBe('reply_too_large');
    expect(server.requests).toHaveLength(1);
  });

  it('bounds a whole (non-streamed) reply the same way', async () => {
    await using server = await startTestServer();
    const message = { role: 'assistant', content: 'y'.repeat(30_000) };
    server.enqueue({
      type: 'json',
      body: {
        id: 'chatcmpl-big',
        object: 'chat.completion',
        created: 0,
        model: 'gpt-4.1',
        choices: [{ index: 0, message, finish_reason: 'stop', logprobs: null }],
      },
    });
    const model = createTestLanguageModel('openai-chat', server, { maxReplyChars: 20_000 });
    expect((await failure(model.generate({ messages: firstTurn }))).code).toBe('reply_too_large');
  });

  it('a stream that trickles forever under the bound ends at the per-attempt timeout, within the retry policy', async () => {
    await using server = await startTestServer();
    const endless = {
      type: 'endless-sse' as const,
      first: [chunk({ role: 'assistant', content: '' })],
      next: () => chunk({ content: '.' }),
      delayMs: 20,
    };
    server.enqueue(endless, endless, endless);
    const model = createTestLanguageModel('openai-chat', server, {
      timeoutMs: 300,
      retry: { maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 5, jitter: 0 },
    });
    const started = performance.now();
    const error = await failure(model.generate({ messages: firstTurn }, { onDelta: () => undefined }));
    expect(error.code).toBe('timeout');
    expect(server.requests).toHaveLength(2);
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it('a whole (non-streamed) reply whose body never ends is cut off at MAX_WHOLE_RESPONSE_BYTES: reply_too_large, not retried', async () => {
    await using server = await startTestServer();
    server.enqueue({
      type: 'endless-json',
      head: '{"id":"chatcmpl-endless","object":"chat.completion","created":0,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"',
      filler: 'x'.repeat(64 * 1024),
    });
    server.enqueue({ type: 'json', body: { unused: true } });
    const model = createTestLanguageModel('openai-chat', server, {
      retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 1 },
    });
    const started = Date.now();
    const error = await failure(model.generate({ messages: firstTurn, tools: [readFileTool] }, { stream: false }));
    expect(error.code).toBe('reply_too_large');
    expect(error.message).toContain(`passed ${MAX_WHOLE_RESPONSE_BYTES} bytes`);
    expect(server.requests).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
