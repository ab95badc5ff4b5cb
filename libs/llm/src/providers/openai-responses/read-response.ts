import type { FinishReason, Usage } from '../../core/language-model.js';
import { emptyUsage } from '../../core/language-model.js';
import { parseWire } from '../../core/parse-wire.js';
import { textContent, type ProviderResult } from '../../core/provider-adapter.js';
import type { Reasoning, ToolCall } from '../../messages.js';
import { FunctionCallItem, MessageItem, ReasoningItem, ResponseObject } from './responses-wire.js';

export const RESPONSES_PROVIDER = 'openai-responses';

type ReasoningItems = NonNullable<Reasoning['items']>;

export function readResponse(body: unknown): ProviderResult {
  const response = parseWire(ResponseObject, body, RESPONSES_PROVIDER, 'response');
  let text = '';
  const toolCalls: ToolCall[] = [];
  const items: ReasoningItems[number][] = [];
  const reasoningTexts: string[] = [];
  for (const [index, raw] of response.output.entries()) {
    const where = `response.output[${index}]`;
    if (raw.type === 'message') {
      const item = parseWire(MessageItem, raw, RESPONSES_PROVIDER, where);
      for (const part of item.content) text += part.text ?? part.refusal ?? '';
    } else if (raw.type === 'function_call') {
      const item = parseWire(FunctionCallItem, raw, RESPONSES_PROVIDER, where);
      toolCalls.push({ id: item.call_id, name: item.name, arguments: item.arguments });
    } else if (raw.type === 'reasoning') {
      const item = parseWire(ReasoningItem, raw, RESPONSES_PROVIDER, where);
      const summary = (item.summary ?? []).map((part) => part.text);
      reasoningTexts.push(...summary, ...(item.content ?? []).map((part) => part.text));
      items.push({
        id: item.id,
        summary,
        ...(item.encrypted_content ? { encryptedContent: item.encrypted_content } : {}),
      });
    }
  }
  const reasoning: Reasoning | undefined =
    items.length > 0 ? { items, ...(reasoningTexts.length > 0 ? { text: reasoningTexts.join('\n') } : {}) } : undefined;
  const rawFinishReason = response.incomplete_details?.reason ?? response.status ?? undefined;
  return {
    content: textContent(text),
    toolCalls,
    ...(reasoning ? { reasoning } : {}),
    responseId: response.id,
    model: response.model,
    finishReason: finishReason(
      response.status ?? undefined,
      response.incomplete_details?.reason ?? undefined,
      toolCalls.length > 0,
    ),
    ...(rawFinishReason ? { rawFinishReason } : {}),
    usage: usage(response.usage ?? undefined),
  };
}

function finishReason(status: string | undefined, incomplete: string | undefined, hasToolCalls: boolean): FinishReason {
  if (status === 'incomplete') {
    if (incomplete === 'max_output_tokens') return 'length';
    if (incomplete === 'content_filter') return 'content_filter';
    return 'other';
  }
  if (hasToolCalls) return 'tool_calls';
  return status === 'completed' || status === undefined ? 'stop' : 'other';
}

function usage(raw: ResponseObject['usage'] | undefined): Usage {
  if (!raw) return emptyUsage;
  return {
    inputTokens: raw.input_tokens,
    outputTokens: raw.output_tokens,
    cacheReadTokens: raw.input_tokens_details?.cached_tokens ?? 0,
    cacheWriteTokens: 0,
    reasoningTokens: raw.output_tokens_details?.reasoning_tokens ?? 0,
  };
}
