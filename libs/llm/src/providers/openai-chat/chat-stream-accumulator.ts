import { malformedResponse } from '../../core/errors.js';
import type { StreamDelta } from '../../core/language-model.js';
import { parseWire } from '../../core/parse-wire.js';
import type { ProviderResult } from '../../core/provider-adapter.js';
import { ChatChunk, type ChatUsage } from './chat-wire.js';
import { CHAT_PROVIDER, chatResult } from './read-chat-completion.js';

type PartialToolCall = { id: string; name: string; arguments: string };

/** Folds Chat Completions stream chunks into the same result a non-streamed call returns. */
export class ChatStreamAccumulator {
  #id: string | undefined;
  #model = '';
  #text = '';
  #reasoning = '';
  #finishReason: string | undefined;
  #usage: ChatUsage | undefined;
  readonly #toolCalls = new Map<number, PartialToolCall>();
  readonly #onDelta: ((delta: StreamDelta) => void) | undefined;

  constructor(onDelta?: (delta: StreamDelta) => void) {
    this.#onDelta = onDelta;
  }

  add(raw: unknown): void {
    const chunk = parseWire(ChatChunk, raw, CHAT_PROVIDER, 'stream chunk');
    this.#id ??= chunk.id;
    if (chunk.model) this.#model = chunk.model;
    if (chunk.usage) this.#usage = chunk.usage;
    for (const choice of chunk.choices) {
      if ((choice.index ?? 0) !== 0) continue;
      if (choice.finish_reason) this.#finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.content) {
        this.#text += delta.content;
        this.#onDelta?.({ type: 'text', text: delta.content });
      }
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) {
        this.#reasoning += reasoning;
        this.#onDelta?.({ type: 'reasoning', text: reasoning });
      }
      for (const call of delta.tool_calls ?? []) this.#addToolCall(call);
    }
  }

  #addToolCall(call: {
    index: number;
    id?: string | null;
    function?: { name?: string | null; arguments?: string | null } | null;
  }): void {
    const existing = this.#toolCalls.get(call.index) ?? { id: '', name: '', arguments: '' };
    if (call.id) existing.id = call.id;
    if (call.function?.name) existing.name += call.function.name;
    const argumentsDelta = call.function?.arguments ?? '';
    existing.arguments += argumentsDelta;
    this.#toolCalls.set(call.index, existing);
    this.#onDelta?.({
      type: 'tool_call',
      index: call.index,
      ...(call.id ? { id: call.id } : {}),
      ...(call.function?.name ? { name: call.function.name } : {}),
      argumentsDelta,
    });
  }

  finish(): ProviderResult {
    if (this.#id === undefined) throw malformedResponse(CHAT_PROVIDER, 'the stream ended without any chunk');
    if (this.#finishReason === undefined)
      throw malformedResponse(CHAT_PROVIDER, 'the stream ended without a finish_reason');
    const toolCalls = [...this.#toolCalls.entries()].sort(([left], [right]) => left - right).map(([, call]) => call);
    const unnamed = toolCalls.find((call) => call.id === '' || call.name === '');
    if (unnamed) throw malformedResponse(CHAT_PROVIDER, 'a streamed tool call has no id or name');
    return chatResult({
      id: this.#id,
      model: this.#model,
      text: this.#text,
      toolCalls,
      reasoning: this.#reasoning ? { text: this.#reasoning } : undefined,
      finishReason: this.#finishReason,
      usage: this.#usage,
    });
  }
}
