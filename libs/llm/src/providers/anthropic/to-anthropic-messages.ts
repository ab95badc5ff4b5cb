import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageParam,
  TextBlockParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { parseJsonObject } from '../../core/parse-wire.js';
import type { ChatMessage, ContentPart, SystemBlock } from '../../messages.js';

export type AnthropicPrompt = { readonly system: TextBlockParam[] | undefined; readonly messages: MessageParam[] };

const EPHEMERAL = { type: 'ephemeral' } as const;

/**
 * Provider-neutral messages to Anthropic Messages: system blocks with a cache breakpoint on the last
 * static block, consecutive tool results merged into one user turn, thinking blocks replayed verbatim
 * and, when caching, a second breakpoint on the last user/tool turn.
 */
export function toAnthropicPrompt(messages: readonly ChatMessage[], caching: boolean): AnthropicPrompt {
  const systemBlocks: SystemBlock[] = [];
  const output: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const push = (role: 'user' | 'assistant', content: ContentBlockParam[]): void => {
    const previous = output.at(-1);
    if (role === 'user' && previous?.role === 'user') previous.content.push(...content);
    else output.push({ role, content });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        systemBlocks.push(...message.content);
        break;
      case 'user':
        push('user', message.content.map(toBlock));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(message));
        break;
      case 'tool':
        push('user', [toolResult(message)]);
        break;
    }
  }
  if (caching) markLastUserTurn(output);
  return { system: systemBlocks.length > 0 ? toSystem(systemBlocks, caching) : undefined, messages: output };
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
  for (const part of message.content) if (part.type === 'text' && part.text.length > 0) blocks.push({ type: 'text', text: part.text });
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
  return { type: 'image', source: { type: 'base64', media_type: mediaType, data: part.data ?? '' } };
}

function markLastUserTurn(output: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[]): void {
  const lastUser = output.findLast((message) => message.role === 'user');
  const last = lastUser?.content.at(-1);
  if (!lastUser || !last) return;
  lastUser.content[lastUser.content.length - 1] = { ...last, cache_control: EPHEMERAL } as ContentBlockParam;
}
