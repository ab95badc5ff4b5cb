import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../messages.js';
import { encodedChatMessages } from './openai-chat/to-chat-messages.js';
import { toResponsesInput } from './openai-responses/to-responses-input.js';

const PNG = 'iVBORw0KGgo=';
const decode = (chunks: readonly Uint8Array[]): unknown[] =>
  chunks
    .filter((chunk) => chunk.length > 0)
    .map((chunk) => JSON.parse(`[${new TextDecoder().decode(chunk)}]`))
    .flat();

/** A step that called two tools, the first answering with a screenshot, then the user's next word. */
const MESSAGES: ChatMessage[] = [
  { role: 'system', content: [{ text: 'You browse.', cache: false }] },
  { role: 'user', content: [{ type: 'text', text: 'Open the page.' }] },
  {
    role: 'assistant',
    content: [],
    toolCalls: [
      { id: 'call_1', name: 'browser', arguments: '{"action":{"type":"screenshot"}}' },
      { id: 'call_2', name: 'think', arguments: '{"thought":"x"}' },
    ],
  },
  {
    role: 'tool',
    toolCallId: 'call_1',
    toolName: 'browser',
    content: [
      { type: 'text', text: 'Screenshot of http://127.0.0.1:8000/' },
      { type: 'image', data: PNG, mediaType: 'image/png' },
    ],
  },
  {
    role: 'tool',
    toolCallId: 'call_2',
    toolName: 'think',
    content: [{ type: 'text', text: 'Your thought has been logged.' }],
  },
  { role: 'user', content: [{ type: 'text', text: 'Go on.' }] },
];

describe("a tool result's images reach the model", () => {
  it('over Chat Completions: in a user message right after the run of tool messages, which hold text only', () => {
    const sent = encodedChatMessages(MESSAGES).map((chunk) => JSON.parse(new TextDecoder().decode(chunk)) as unknown);
    expect(sent.map((message) => (message as { role: string }).role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'user',
      'user',
    ]);
    expect(sent[3]).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: 'Screenshot of http://127.0.0.1:8000/\n[image: in the user message after the tool results]',
    });
    expect(sent[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'The image of the browser result call_1:' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
  });

  it('over Responses: in the function call output itself, as text and image parts', () => {
    const items = decode(toResponsesInput(MESSAGES).input) as { type: string; call_id?: string; output?: unknown }[];
    const outputs = items.filter((item) => item.type === 'function_call_output');
    expect(outputs).toEqual([
      {
        type: 'function_call_output',
        call_id: 'call_1',
        output: [
          { type: 'input_text', text: 'Screenshot of http://127.0.0.1:8000/\n[image: below]' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' },
        ],
      },
      { type: 'function_call_output', call_id: 'call_2', output: 'Your thought has been logged.' },
    ]);
  });
});
