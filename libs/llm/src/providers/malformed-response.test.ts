import { describe, expect, it } from 'vitest';
import {
  createTestLanguageModel,
  firstTurn,
  frameSse,
  loadFixture,
  startTestServer,
  type HttpReply,
  type TestProvider,
} from '../testing/index.js';

async function failure(provider: TestProvider, reply: HttpReply, stream: boolean): Promise<unknown> {
  await using server = await startTestServer();
  server.enqueue(reply);
  return await createTestLanguageModel(provider, server)
    .generate({ messages: firstTurn }, { stream })
    .catch((caught: unknown) => caught);
}

describe('malformed provider output gives a clear malformed_response error', () => {
  it.each([
    ['openai-chat', 'data: {"id": "chatcmpl-1", "choices": [\n\n'],
    ['openai-responses', 'event: response.created\ndata: {not json}\n\n'],
    ['anthropic', 'event: message_start\ndata: {"type": "message_start", "message": \n\n'],
  ] as const)('%s: invalid JSON in an SSE event', async (provider, body) => {
    const error = await failure(provider, { type: 'raw', body }, true);
    expect(error).toMatchObject({ code: 'malformed_response', isRetryable: false, provider });
    expect((error as Error).message).toMatch(/not valid JSON/);
  });

  it.each([
    ['openai-chat', { id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4.1', choices: [] }, /choices/],
    ['openai-responses', { id: 'resp_1', object: 'response', model: 'gpt-5', status: 'completed' }, /output/],
    [
      'anthropic',
      {
        id: 'msg_1',
        type: 'message',
        model: 'claude-sonnet-4-6',
        content: [{ type: 'tool_use', id: 'toolu_1' }],
        usage: {},
      },
      /content\[0\]/,
    ],
  ] as const)('%s: a JSON body with missing fields', async (provider, body, detail) => {
    const error = await failure(provider, { type: 'json', body }, false);
    expect(error).toMatchObject({ code: 'malformed_response', provider });
    expect((error as Error).message).toMatch(detail);
  });

  it.each([
    ['openai-chat', 'openai-chat-tool-call', /finish_reason/],
    ['openai-responses', 'openai-responses-tool-call', /response\.completed/],
    ['anthropic', 'anthropic-tool-call', /message_stop/],
  ] as const)('%s: a stream that ends early', async (provider, fixture, detail) => {
    const events = loadFixture(fixture).stream.slice(0, 4);
    const body = events
      .map((data) => frameSse(provider === 'openai-chat' ? { data } : { event: (data as { type: string }).type, data }))
      .join('');
    const error = await failure(provider, { type: 'raw', body }, true);
    expect(error).toMatchObject({ code: 'malformed_response' });
    expect((error as Error).message).toMatch(detail);
  });
});
