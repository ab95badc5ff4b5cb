import { describe, expect, it } from 'vitest';
import type { GenerateResult, StreamDelta } from '../core/language-model.js';
import {
  createTestLanguageModel,
  firstTurn,
  fixtureReply,
  loadFixture,
  readFileTool,
  startTestServer,
  type FixtureName,
  type TestProvider,
} from '../testing/index.js';

const CASES: readonly (readonly [TestProvider, FixtureName])[] = [
  ['openai-chat', 'openai-chat-tool-call'],
  ['openai-responses', 'openai-responses-tool-call'],
  ['anthropic', 'anthropic-tool-call'],
];

async function run(
  provider: TestProvider,
  fixture: FixtureName,
  stream: boolean,
): Promise<{ result: GenerateResult; deltas: StreamDelta[] }> {
  await using server = await startTestServer();
  server.enqueue(fixtureReply(loadFixture(fixture)));
  const model = createTestLanguageModel(provider, server, { reasoningEffort: 'medium' });
  const deltas: StreamDelta[] = [];
  const result = await model.generate(
    { messages: firstTurn, tools: [readFileTool] },
    stream ? { onDelta: (delta) => deltas.push(delta) } : {},
  );
  expect((server.requests[0]?.body as { stream?: boolean }).stream ?? false).toBe(stream);
  return { result, deltas };
}

function comparable(result: GenerateResult): object {
  return {
    content: result.content,
    toolCalls: result.toolCalls.map(({ name, arguments: args }) => ({ name, args: JSON.parse(args) as unknown })),
    finishReason: result.finishReason,
    usage: { ...result.usage, reasoningTokens: undefined },
  };
}

function withoutTiming(result: GenerateResult): object {
  return { ...result, latencyMs: undefined };
}

describe('the same recorded tool-calling turn', () => {
  it('yields equivalent results through Chat Completions, Responses and Anthropic', async () => {
    const results = await Promise.all(CASES.map(([provider, fixture]) => run(provider, fixture, false)));
    const [chat, responses, anthropic] = results.map(({ result }) => result);
    expect(comparable(chat!)).toEqual({
      content: [{ type: 'text', text: "I'll read both files." }],
      toolCalls: [
        { name: 'read_file', args: { path: 'package.json' } },
        { name: 'read_file', args: { path: 'tsconfig.json' } },
      ],
      finishReason: 'tool_calls',
      usage: {
        inputTokens: 1200,
        outputTokens: 58,
        cacheReadTokens: 1024,
        cacheWriteTokens: 0,
        reasoningTokens: undefined,
      },
    });
    expect(comparable(responses!)).toEqual(comparable(chat!));
    expect(comparable(anthropic!)).toEqual(comparable(chat!));
    expect(chat!.responseId).toMatch(/^chatcmpl-/);
    expect(responses!.responseId).toMatch(/^resp_/);
    expect(anthropic!.responseId).toMatch(/^msg_/);
    expect(anthropic!.toolCalls.map((call) => call.id)).toEqual([
      'toolu_01A09q90qw90lq917835lq9',
      'toolu_01BqN5cQ8xZ3vK7mT2wR4yP6',
    ]);
    expect(responses!.toolCalls[0]?.id).toBe('call_Q1w2E3r4T5y6U7i8O9p0A1s2');
    expect(anthropic!.reasoning?.thinkingBlocks?.[0]).toMatchObject({
      type: 'thinking',
      signature: expect.stringMatching(/^EqQB/),
    });
    expect(responses!.reasoning?.items?.[0]).toMatchObject({
      id: expect.stringMatching(/^rs_/),
      encryptedContent: expect.stringMatching(/^gAAAA/),
    });
    expect(responses!.usage.reasoningTokens).toBe(20);
  });

  it.each(CASES)(
    '%s: a streamed response assembles into exactly the non-streamed result',
    async (provider, fixture) => {
      const plain = await run(provider, fixture, false);
      const streamed = await run(provider, fixture, true);
      expect(withoutTiming(streamed.result)).toEqual(withoutTiming(plain.result));

      const text = streamed.deltas.flatMap((delta) => (delta.type === 'text' ? [delta.text] : [])).join('');
      expect(text).toBe("I'll read both files.");
      for (const [index, call] of streamed.result.toolCalls.entries()) {
        const parts = streamed.deltas.filter((delta) => delta.type === 'tool_call' && delta.index === index);
        expect(parts[0]).toMatchObject({ id: call.id, name: call.name });
        const args = parts.map((delta) => (delta.type === 'tool_call' ? delta.argumentsDelta : '')).join('');
        expect(JSON.parse(args)).toEqual(JSON.parse(call.arguments));
      }
      if (provider !== 'openai-chat') expect(streamed.deltas.some((delta) => delta.type === 'reasoning')).toBe(true);
    },
  );
});
