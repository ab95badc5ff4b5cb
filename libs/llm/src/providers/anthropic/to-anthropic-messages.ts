import type {
  ContentBlockParam,
  ImageBlockParam,
  TextBlockParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { EncodedJson } from '../../core/json-body.js';
import { parseJsonObject } from '../../core/parse-wire.js';
import type { ChatMessage, ContentPart, SystemBlock } from '../../messages.js';
import { imageData } from '../openai-chat/to-chat-messages.js';

export type AnthropicPrompt = {
  readonly system: TextBlockParam[] | undefined;
  /** Each turn (a message of the Messages API) as UTF-8 JSON, in parts to be copied together. */
  readonly messages: readonly (readonly Uint8Array[])[];
};

const EPHEMERAL = { type: 'ephemeral' } as const;

type TurnMessage = Exclude<ChatMessage, { role: 'system' }>;

// Each step sends the whole conversation again, mostly as the same message objects as the step
// before: each message's content blocks are encoded once, and once more with a cache breakpoint
// on the last block for the step it closes the last user turn. A message is never changed.
const blocks = new EncodedJson<TurnMessage>((message) => JSON.stringify(contentBlocks(message)).slice(1, -1));
const markedBlocks = new EncodedJson<TurnMessage>((message) =>
  JSON.stringify(withBreakpoint(contentBlocks(message))).slice(1, -1),
);

const utf8 = new TextEncoder();
const OPEN = {
  user: utf8.encode('{"role":"user","content":['),
  assistant: utf8.encode('{"role":"assistant","content":['),
};
const COMMA = utf8.encode(',');
const CLOSE = utf8.encode(']}');

/**
 * Provider-neutral messages to Anthropic Messages: system blocks with a cache breakpoint on the last
 * static block, consecutive tool results merged into one user turn, thinking blocks replayed verbatim
 * and, when caching, a second breakpoint on the last user/tool turn.
 */
export function toAnthropicPrompt(messages: readonly ChatMessage[], caching: boolean): AnthropicPrompt {
  const systemBlocks: SystemBlock[] = [];
  const turns: { role: 'user' | 'assistant'; messages: TurnMessage[] }[] = [];
  for (const message of messages) {
    if (message.role === 'system') {
      systemBlocks.push(...message.content);
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const previous = turns.at(-1);
    if (role === 'user' && previous?.role === 'user') previous.messages.push(message);
    else turns.push({ role, messages: [message] });
  }
  const lastUser = caching ? turns.findLast((turn) => turn.role === 'user') : undefined;
  // the breakpoint goes on the turn's last block: that of its last message with any
  const marked = lastUser?.messages.findLast((message) => blocks.of(message).byteLength > 0);
  return {
    system: systemBlocks.length > 0 ? toSystem(systemBlocks, caching) : undefined,
    messages: turns.map((turn) => {
      const parts: Uint8Array[] = [OPEN[turn.role]];
      for (const message of turn.messages) {
        const encoded = message === marked ? markedBlocks.of(message) : blocks.of(message);
        if (encoded.byteLength === 0) continue;
        if (parts.length > 1) parts.push(COMMA);
        parts.push(encoded);
      }
      parts.push(CLOSE);
      return parts;
    }),
  };
}

function contentBlocks(message: TurnMessage): ContentBlockParam[] {
  switch (message.role) {
    case 'user':
      return message.content.map(toBlock);
    case 'assistant':
      return assistantBlocks(message);
    case 'tool':
      return [toolResult(message)];
  }
}

function withBreakpoint(content: ContentBlockParam[]): ContentBlockParam[] {
  const last = content.at(-1);
  return last ? [...content.slice(0, -1), { ...last, cache_control: EPHEMERAL } as ContentBlockParam] : content;
}

function toSystem(blocks: readonly SystemBlock[], caching: boolean): TextBlockParam[] {
  const lastCached = caching ? blocks.findLastIndex((block) => block.cache) : -1;
  return blocks.map((block, index) => ({
    type: 'text',
    text: block.text,
    ...(index === lastCached ? { cache_control: EPHEMERAL } : {}),
  }));
}

function assistantBlocks(message: Extract<ChatMessage, { role: 'assistant' }>): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  for (const block of message.reasoning?.thinkingBlocks ?? []) {
    blocks.push(block.type === 'thinking' ? { ...block } : { type: 'redacted_thinking', data: block.data });
  }
  for (const part of message.content)
    if (part.type === 'text' && part.text.length > 0) blocks.push({ type: 'text', text: part.text });
  for (const call of message.toolCalls) {
    const input = parseJsonObject(call.arguments) ?? { invalid_json_arguments: call.arguments };
    blocks.push({ type: 'tool_use', id: call.id, name: call.name, input });
  }
  return blocks;
}

function toolResult(message: Extract<ChatMessage, { role: 'tool' }>): ToolResultBlockParam {
  return {
    type: 'tool_result',
    tool_use_id: message.toolCallId,
    content: message.content.map((part) => toBlock(part) as TextBlockParam | ImageBlockParam),
    ...(message.isError ? { is_error: true } : {}),
  };
}

function toBlock(part: ContentPart): TextBlockParam | ImageBlockParam {
  if (part.type === 'text') return { type: 'text', text: part.text };
  if (part.url !== undefined) return { type: 'image', source: { type: 'url', url: part.url } };
  const mediaType = (part.mediaType ?? 'image/png') as 'image/png';
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data: imageData(part) } };
}
