import type { ChatMessage, SystemBlock, ToolSchema } from '../messages.js';
import { renderToolCall, renderToolPrompt, renderToolResult } from './tool-prompt.js';

/**
 * Rewrites a conversation for a model without native tool calling: tool specs join the cached
 * system prefix, assistant tool calls become text blocks and tool results become user text.
 */
export function toPromptToolMessages(messages: readonly ChatMessage[], tools: readonly ToolSchema[]): ChatMessage[] {
  const output: ChatMessage[] = [];
  const hasSystem = messages.some((message) => message.role === 'system');
  if (!hasSystem && tools.length > 0) output.push({ role: 'system', content: [toolBlock(tools)] });
  let previousWasToolResult = false;
  for (const message of messages) {
    const previous = output.at(-1);
    const isToolResult = message.role === 'tool';
    switch (message.role) {
      case 'system':
        output.push({ role: 'system', content: withToolBlock(message.content, tools) });
        break;
      case 'assistant': {
        const calls = message.toolCalls.map(renderToolCall);
        const text = [...message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])), ...calls].join(
          '\n',
        );
        output.push({ ...message, content: text ? [{ type: 'text', text }] : [], toolCalls: [] });
        break;
      }
      case 'tool': {
        const body = message.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('\n');
        const text = renderToolResult(message.toolName, message.toolCallId, body, message.isError === true);
        if (previousWasToolResult && previous?.role === 'user') {
          output[output.length - 1] = { role: 'user', content: [...previous.content, { type: 'text', text }] };
        } else {
          output.push({ role: 'user', content: [{ type: 'text', text }] });
        }
        break;
      }
      case 'user':
        output.push(message);
        break;
    }
    previousWasToolResult = isToolResult;
  }
  return output;
}

function toolBlock(tools: readonly ToolSchema[]): SystemBlock {
  return { text: renderToolPrompt(tools), cache: true };
}

/** Inserts the tool section right after the last cached block so it stays in the cached prefix. */
function withToolBlock(blocks: readonly SystemBlock[], tools: readonly ToolSchema[]): SystemBlock[] {
  if (tools.length === 0) return [...blocks];
  const lastCached = blocks.findLastIndex((block) => block.cache);
  const at = lastCached === -1 ? blocks.length : lastCached + 1;
  return [...blocks.slice(0, at), toolBlock(tools), ...blocks.slice(at)];
}
