import { emptyUsage, type FinishReason, type Usage } from '../../core/language-model.js';
import { parseWire } from '../../core/parse-wire.js';
import { textContent, type ProviderResult } from '../../core/provider-adapter.js';
import type { Reasoning } from '../../messages.js';
import { ChatCompletion, type ChatUsage } from './chat-wire.js';

export const CHAT_PROVIDER = 'openai-chat';

export function readChatCompletion(body: unknown): ProviderResult {
  const completion = parseWire(ChatCompletion, body, CHAT_PROVIDER, 'chat completion');
  const choice = completion.choices[0];
  const message = choice?.message;
  const toolCalls = (message?.tool_calls ?? []).map((call) => ({
    id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
  }));
  const reasoningText = message?.reasoning_content ?? message?.reasoning ?? '';
  return chatResult({
    id: completion.id,
    model: completion.model,
    text: message?.content ?? message?.refusal ?? '',
    toolCalls,
    reasoning: reasoningText ? { text: reasoningText } : undefined,
    finishReason: choice?.finish_reason ?? undefined,
    usage: completion.usage ?? undefined,
  });
}

export type ChatResultParts = {
  readonly id: string;
  readonly model: string;
  readonly text: string;
  readonly toolCalls: ProviderResult['toolCalls'];
  readonly reasoning: Reasoning | undefined;
  readonly finishReason: string | undefined;
  readonly usage: ChatUsage | undefined;
};

export function chatResult(parts: ChatResultParts): ProviderResult {
  return {
    content: textContent(parts.text),
    toolCalls: parts.toolCalls,
    ...(parts.reasoning ? { reasoning: parts.reasoning } : {}),
    responseId: parts.id,
    model: parts.model,
    finishReason: chatFinishReason(parts.finishReason, parts.toolCalls.length > 0),
    ...(parts.finishReason ? { rawFinishReason: parts.finishReason } : {}),
    usage: chatUsage(parts.usage),
  };
}

function chatFinishReason(raw: string | undefined, hasToolCalls: boolean): FinishReason {
  if (hasToolCalls && (raw === 'tool_calls' || raw === 'function_call' || raw === 'stop' || raw === undefined))
    return 'tool_calls';
  switch (raw) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'content_filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

export function chatUsage(usage: ChatUsage | undefined): Usage {
  if (!usage) return emptyUsage;
  return {
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    cacheReadTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}
