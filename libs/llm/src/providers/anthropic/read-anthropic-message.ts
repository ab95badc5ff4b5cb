import type { FinishReason, Usage } from '../../core/language-model.js';
import { parseWire } from '../../core/parse-wire.js';
import { textContent, type ProviderResult } from '../../core/provider-adapter.js';
import type { ThinkingBlock, ToolCall } from '../../messages.js';
import { AnthropicBlock, AnthropicMessage, type AnthropicUsage } from './anthropic-wire.js';

export const ANTHROPIC_PROVIDER = 'anthropic';

export function readAnthropicMessage(body: unknown): ProviderResult {
  const message = parseWire(AnthropicMessage, body, ANTHROPIC_PROVIDER, 'message');
  let text = '';
  const toolCalls: ToolCall[] = [];
  const thinkingBlocks: ThinkingBlock[] = [];
  for (const [index, raw] of message.content.entries()) {
    if (!['text', 'thinking', 'redacted_thinking', 'tool_use'].includes(raw.type)) continue;
    const block = parseWire(AnthropicBlock, raw, ANTHROPIC_PROVIDER, `content[${index}]`);
    switch (block.type) {
      case 'text':
        text += block.text;
        break;
      case 'thinking':
        thinkingBlocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
        break;
      case 'redacted_thinking':
        thinkingBlocks.push({ type: 'redacted_thinking', data: block.data });
        break;
      case 'tool_use':
        toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input) });
        break;
    }
  }
  const thinkingText = thinkingBlocks
    .flatMap((block) => (block.type === 'thinking' ? [block.thinking] : []))
    .join('\n');
  return {
    content: textContent(text),
    toolCalls,
    ...(thinkingBlocks.length > 0
      ? { reasoning: { thinkingBlocks, ...(thinkingText ? { text: thinkingText } : {}) } }
      : {}),
    responseId: message.id,
    model: message.model,
    finishReason: finishReason(message.stop_reason ?? undefined),
    ...(message.stop_reason ? { rawFinishReason: message.stop_reason } : {}),
    usage: anthropicUsage(message.usage),
  };
}

function finishReason(stopReason: string | undefined): FinishReason {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'refusal':
      return 'content_filter';
    default:
      return 'other';
  }
}

/** Anthropic's input_tokens excludes cached tokens; ours includes them. */
function anthropicUsage(usage: AnthropicUsage): Usage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const cacheWrite = usage.cache_creation_input_tokens ?? 0;
  return {
    inputTokens: (usage.input_tokens ?? 0) + cacheRead + cacheWrite,
    outputTokens: usage.output_tokens ?? 0,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: 0,
  };
}
