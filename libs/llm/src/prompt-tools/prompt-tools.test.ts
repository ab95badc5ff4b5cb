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
} from '../testing/index.js';
import { parseToolCallText } from './parse-tool-calls.js';
import { findTextToolCall } from './text-tool-calls.js';
import { renderToolPrompt } from './tool-prompt.js';
import { toPromptToolMessages } from './to-prompt-messages.js';

type ChatBody = { tools?: unknown; messages: { role: string; content: string }[] };

describe('prompt-based tool calling', () => {
  it('describes tools in the system prompt, parses calls back and renders results as user text', async () => {
    await using server = await startTestServer();
    const reply = fixtureReply(loadFixture('openai-chat-prompt-tools'));
    server.enqueue(reply, reply);
    const model = createTestLanguageModel('openai-chat', server, { nativeToolCalling: false });
    const result = await model.generate({ messages: firstTurn, tools: [readFileTool] });

    const first = server.requests[0]?.body as ChatBody;
    expect(first.tools).toBeUndefined();
    expect(first.messages[0]?.content).toContain('<tools>');
    expect(first.messages[0]?.content).toContain('"name":"read_file"');
    expect(first.messages[0]?.content.indexOf('<tools>')).toBeLessThan(
      first.messages[0]?.content.indexOf('Today is') ?? 0,
    );

    expect(model.info.nativeToolCalling).toBe(false);
    expect(result.content).toEqual([{ type: 'text', text: 'I will list the files first.' }]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.toolCalls).toEqual([
      { id: `${result.responseId}-call-0`, name: 'list_files', arguments: '{"path":"src","recursive":true}' },
      { id: `${result.responseId}-call-1`, name: 'read_file', arguments: '{"path":"README.md"}' },
    ]);

    const toolResults: ChatMessage[] = result.toolCalls.map((call) => ({
      role: 'tool',
      toolCallId: call.id,
      toolName: call.name,
      content: [{ type: 'text', text: `output of ${call.name}` }],
    }));
    await model.generate({
      messages: [...firstTurn, toAssistantMessage(result), ...toolResults],
      tools: [readFileTool],
    });
    const second = server.requests[1]?.body as ChatBody;
    expect(second.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(second.messages[2]?.content).toContain(
      '<tool_call>\n{"name": "list_files", "arguments": {"path":"src","recursive":true}}\n</tool_call>',
    );
    expect(second.messages[3]?.content).toBe(
      `<tool_result name="list_files" id="${result.responseId}-call-0">\noutput of list_files\n</tool_result>\n` +
        `<tool_result name="read_file" id="${result.responseId}-call-1">\noutput of read_file\n</tool_result>`,
    );
  });

  it('streams the same parsed result', async () => {
    await using server = await startTestServer();
    const reply = fixtureReply(loadFixture('openai-chat-prompt-tools'));
    server.enqueue(reply, reply);
    const model = createTestLanguageModel('openai-chat', server, { nativeToolCalling: false });
    const plain = await model.generate({ messages: firstTurn, tools: [readFileTool] });
    const streamed = await model.generate({ messages: firstTurn, tools: [readFileTool] }, { onDelta: () => undefined });
    expect({ ...streamed, latencyMs: 0 }).toEqual({ ...plain, latencyMs: 0 });
  });

  it('keeps unparseable calls visible instead of dropping them, and accepts an unterminated last block', () => {
    const parsed = parseToolCallText(
      'Let me try.\n<tool_call>\n{"name": "run", "arguments": {"cmd": "ls"\n</tool_call>\n<tool_call>{"name":"read_file","arguments":{"path":"a"}}',
      'r1',
    );
    expect(parsed.text).toBe('Let me try.');
    expect(parsed.toolCalls).toEqual([
      { id: 'r1-call-0', name: 'run', arguments: '{"name": "run", "arguments": {"cmd": "ls"' },
      { id: 'r1-call-1', name: 'read_file', arguments: '{"path":"a"}' },
    ]);
    expect(parseToolCallText('no calls here', 'r2')).toEqual({ text: 'no calls here', toolCalls: [] });
  });

  it('adds a system prompt when the conversation has none and flags failed tool results', () => {
    const messages = toPromptToolMessages(
      [{ role: 'tool', toolCallId: 'c1', toolName: 'run', content: [{ type: 'text', text: 'boom' }], isError: true }],
      [readFileTool],
    );
    expect(messages[0]).toEqual({ role: 'system', content: [{ text: renderToolPrompt([readFileTool]), cache: true }] });
    expect(messages[1]).toEqual({
      role: 'user',
      content: [{ type: 'text', text: '<tool_result name="run" id="c1" status="error">\nboom\n</tool_result>' }],
    });
  });
});

describe('tool calls written as text by a model with native tool calls', () => {
  const tools = ['terminal', 'file_editor'];
  it('finds <tool_call> blocks, <function=…> markup and a reply that is one JSON call', () => {
    expect(
      findTextToolCall(
        'Let me look.\n<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>',
        tools,
      ),
    ).toEqual({ format: 'tool_call', name: 'terminal' });
    expect(findTextToolCall('<function=terminal>\n<parameter=command>\nls\n</parameter>\n</function>', tools)).toEqual({
      format: 'function',
      name: 'terminal',
    });
    expect(findTextToolCall('<invoke name="bash"><parameter name="command">ls</parameter></invoke>', tools)).toEqual({
      format: 'function',
      name: 'bash',
    });
    expect(findTextToolCall('{"tool": "terminal", "arguments": {"command": "ls"}}', tools)).toEqual({
      format: 'json',
      name: 'terminal',
    });
    expect(
      findTextToolCall('```json\n{"name": "file_editor", "parameters": {"command": "view", "path": "a"}}\n```', tools),
    ).toEqual({ format: 'json', name: 'file_editor' });
    expect(
      findTextToolCall('[{"type": "function", "function": {"name": "terminal", "arguments": "{}"}}]', tools),
    ).toEqual({ format: 'json', name: 'terminal' });
  });

  it('leaves answers alone: prose, JSON that names no offered tool, JSON inside a longer answer', () => {
    expect(findTextToolCall('Done: the tests pass.', tools)).toBeUndefined();
    expect(findTextToolCall('{"name": "Ada", "age": 36}', tools)).toBeUndefined();
    expect(findTextToolCall('The config is:\n{"tool": "terminal"}\nas you asked.', tools)).toBeUndefined();
    expect(findTextToolCall('{"tool": "terminal"', tools)).toBeUndefined();
  });
});
