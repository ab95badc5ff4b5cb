import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../messages.js';
import { toAnthropicPrompt } from './to-anthropic-messages.js';

const text = (value: string) => [{ type: 'text' as const, text: value }];
const system: ChatMessage = {
  role: 'system',
  content: [
    { text: 'static', cache: true },
    { text: 'dynamic', cache: false },
  ],
};
const user: ChatMessage = { role: 'user', content: text('do it') };
const assistant: ChatMessage = {
  role: 'assistant',
  content: text('on it'),
  toolCalls: [
    { id: 'a', name: 'terminal', arguments: '{"command":"ls"}' },
    { id: 'b', name: 'terminal', arguments: 'not json' },
  ],
};
const resultA: ChatMessage = {
  role: 'tool',
  toolCallId: 'a',
  toolName: 'terminal',
  content: text('file'),
  isError: false,
};
const resultB: ChatMessage = {
  role: 'tool',
  toolCallId: 'b',
  toolName: 'terminal',
  content: text('bad'),
  isError: true,
};
const empty: ChatMessage = { role: 'user', content: [] };

const turns = (messages: readonly ChatMessage[], caching: boolean): unknown[] =>
  toAnthropicPrompt(messages, caching).messages.map(
    (parts) => JSON.parse(Buffer.concat(parts).toString('utf8')) as unknown,
  );

describe('toAnthropicPrompt', () => {
  it('merges tool results into one user turn and puts the breakpoint on the last block of the last user turn', () => {
    const prompt = toAnthropicPrompt([system, user, assistant, resultA, resultB, empty], true);
    expect(prompt.system).toEqual([
      { type: 'text', text: 'static', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'dynamic' },
    ]);
    expect(turns([system, user, assistant, resultA, resultB, empty], true)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'do it' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'on it' },
          { type: 'tool_use', id: 'a', name: 'terminal', input: { command: 'ls' } },
          { type: 'tool_use', id: 'b', name: 'terminal', input: { invalid_json_arguments: 'not json' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: [{ type: 'text', text: 'file' }] },
          // the empty user message after it has no block to carry the breakpoint
          {
            type: 'tool_result',
            tool_use_id: 'b',
            content: [{ type: 'text', text: 'bad' }],
            is_error: true,
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ]);
  });

  it('moves the breakpoint with the conversation, the same message objects encoded both ways', () => {
    expect(turns([user], true)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'do it', cache_control: { type: 'ephemeral' } }] },
    ]);
    const later = turns([user, assistant, resultA], true);
    expect(later[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'do it' }] });
    expect(later[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'a',
          content: [{ type: 'text', text: 'file' }],
          cache_control: { type: 'ephemeral' },
        },
      ],
    });
    expect(JSON.stringify(turns([user, assistant, resultA], false))).not.toContain('cache_control');
  });
});
