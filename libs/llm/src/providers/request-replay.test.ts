import { describe, expect, it } from 'vitest';
import { toAssistantMessage } from '../core/language-model.js';
import type { ChatMessage } from '../messages.js';
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

type Body = Record<string, unknown> & { messages?: Record<string, unknown>[]; input?: Record<string, unknown>[] };

/** Runs the recorded first turn, answers both tool calls, and returns the second request body. */
async function secondRequest(
  provider: TestProvider,
  fixture: FixtureName,
  overrides = {},
): Promise<{ first: Body; second: Body }> {
  await using server = await startTestServer();
  const reply = fixtureReply(loadFixture(fixture));
  server.enqueue(reply, reply);
  const model = createTestLanguageModel(provider, server, { reasoningEffort: 'medium', ...overrides });
  const result = await model.generate({ messages: firstTurn, tools: [readFileTool] });
  const toolResults: ChatMessage[] = result.toolCalls.map((call, index) => ({
    role: 'tool',
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: 'text', text: index === 0 ? '{"name":"flotilla"}' : 'ENOENT' }],
    ...(index === 1 ? { isError: true } : {}),
  }));
  await model.generate({ messages: [...firstTurn, toAssistantMessage(result), ...toolResults], tools: [readFileTool] });
  return { first: server.requests[0]?.body as Body, second: server.requests[1]?.body as Body };
}

describe('Anthropic requests', () => {
  it('put cache_control on the static system block and on the last user/tool turn', async () => {
    const { first, second } = await secondRequest('anthropic', 'anthropic-tool-call');
    expect(first['system']).toEqual([
      { type: 'text', text: 'You are a careful software engineer.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Today is 2025-07-03. Repository: flotilla.' },
    ]);
    expect(first.messages?.[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Compare package.json and tsconfig.json.', cache_control: { type: 'ephemeral' } },
      ],
    });
    const lastTurn = second.messages?.at(-1) as { content: Record<string, unknown>[] };
    expect(lastTurn.content.at(-1)?.['cache_control']).toEqual({ type: 'ephemeral' });
    // The earlier user turn no longer carries a breakpoint.
    expect(
      (second.messages?.[0] as { content: Record<string, unknown>[] }).content[0]?.['cache_control'],
    ).toBeUndefined();
  });

  it('replay signed thinking blocks and merge consecutive tool results into one user turn', async () => {
    const { first, second } = await secondRequest('anthropic', 'anthropic-tool-call');
    expect(first['thinking']).toEqual({ type: 'enabled', budget_tokens: 8192 });
    const fixture = loadFixture('anthropic-tool-call').response as { content: unknown[] };
    expect(second.messages?.[1]).toEqual({ role: 'assistant', content: fixture.content });
    expect(second.messages).toHaveLength(3);
    expect(second.messages?.[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01A09q90qw90lq917835lq9',
          content: [{ type: 'text', text: '{"name":"flotilla"}' }],
        },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_01BqN5cQ8xZ3vK7mT2wR4yP6',
          content: [{ type: 'text', text: 'ENOENT' }],
          is_error: true,
          cache_control: { type: 'ephemeral' },
        },
      ],
    });
  });

  it('send no cache_control when prompt caching is off', async () => {
    const { second } = await secondRequest('anthropic', 'anthropic-tool-call', { promptCaching: false });
    expect(JSON.stringify(second)).not.toContain('cache_control');
  });
});

describe('OpenAI Responses requests', () => {
  it('replay reasoning items with encrypted content, function calls and outputs statelessly', async () => {
    const { first, second } = await secondRequest('openai-responses', 'openai-responses-tool-call', {
      promptCacheKey: 'tenant-1',
    });
    expect(first).toMatchObject({
      store: false,
      instructions: 'You are a careful software engineer.\n\nToday is 2025-07-03. Repository: flotilla.',
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'medium', summary: 'auto' },
      prompt_cache_key: 'tenant-1',
    });
    expect(second.input?.slice(1)).toEqual([
      {
        type: 'reasoning',
        id: 'rs_68a1f2c4e5f6a7b8c9d0e1f2a3b4c5d60e9f8a7b6c5d4e3f',
        summary: [
          { type: 'summary_text', text: '**Reading the configs**\n\nI need both files before comparing them.' },
        ],
        encrypted_content: expect.stringMatching(/^gAAAA/),
      },
      { type: 'message', role: 'assistant', content: "I'll read both files." },
      {
        type: 'function_call',
        call_id: 'call_Q1w2E3r4T5y6U7i8O9p0A1s2',
        name: 'read_file',
        arguments: '{"path":"package.json"}',
      },
      {
        type: 'function_call',
        call_id: 'call_D3f4G5h6J7k8L9z0X1c2V3b4',
        name: 'read_file',
        arguments: '{"path":"tsconfig.json"}',
      },
      { type: 'function_call_output', call_id: 'call_Q1w2E3r4T5y6U7i8O9p0A1s2', output: '{"name":"flotilla"}' },
      {
        type: 'function_call_output',
        call_id: 'call_D3f4G5h6J7k8L9z0X1c2V3b4',
        output: '[An error occurred during execution.]\nENOENT',
      },
    ]);
  });
});

describe('OpenAI Chat Completions requests', () => {
  it('carry prompt_cache_key when configured and replay tool calls with their results', async () => {
    const { first, second } = await secondRequest('openai-chat', 'openai-chat-tool-call', {
      promptCacheKey: 'agent-42',
    });
    expect(first['prompt_cache_key']).toBe('agent-42');
    expect(first['tools']).toEqual([{ type: 'function', function: readFileTool }]);
    expect(second.messages?.slice(2)).toEqual([
      {
        role: 'assistant',
        content: "I'll read both files.",
        tool_calls: [
          {
            id: 'call_Kx8Qe2VbN4tR7yU1iO3pA5sD',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"package.json"}' },
          },
          {
            id: 'call_Zm3Lk9Jh6Gf2Ds5Aq8We1Rt4',
            type: 'function',
            function: { name: 'read_file', arguments: '{"path":"tsconfig.json"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_Kx8Qe2VbN4tR7yU1iO3pA5sD', content: '{"name":"flotilla"}' },
      {
        role: 'tool',
        tool_call_id: 'call_Zm3Lk9Jh6Gf2Ds5Aq8We1Rt4',
        content: '[An error occurred during execution.]\nENOENT',
      },
    ]);
  });

  it('never send prompt_cache_key when none is configured, nor when caching is off', async () => {
    const unset = await secondRequest('openai-chat', 'openai-chat-tool-call');
    expect(unset.first).not.toHaveProperty('prompt_cache_key');
    const off = await secondRequest('openai-chat', 'openai-chat-tool-call', {
      promptCacheKey: 'agent-42',
      promptCaching: false,
    });
    expect(off.first).not.toHaveProperty('prompt_cache_key');
  });

  it('use max_tokens for compatible servers and replay reasoning_content they returned', async () => {
    await using server = await startTestServer();
    const reply = fixtureReply(loadFixture('openai-chat-tool-call'));
    server.enqueue(reply);
    const model = createTestLanguageModel('openai-chat', server, { maxOutputTokens: 256 });
    const messages: ChatMessage[] = [
      ...firstTurn,
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Hi' }],
        toolCalls: [],
        reasoning: { text: 'The user greets me.' },
      },
      { role: 'user', content: [{ type: 'text', text: 'Go on.' }] },
    ];
    await model.generate({ messages });
    const body = server.requests[0]?.body as Body;
    expect(body['max_tokens']).toBe(256);
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body.messages?.[2]).toEqual({ role: 'assistant', content: 'Hi', reasoning_content: 'The user greets me.' });
  });
});
