import { malformedResponse } from '../../core/errors.js';
import type { StreamDelta } from '../../core/language-model.js';
import { parseJsonObject, parseWire } from '../../core/parse-wire.js';
import type { ProviderResult } from '../../core/provider-adapter.js';
import { AnthropicEvent, type AnthropicUsage } from './anthropic-wire.js';
import { ANTHROPIC_PROVIDER, readAnthropicMessage } from './read-anthropic-message.js';

type OpenBlock = { readonly raw: Record<string, unknown>; partialJson: string; readonly toolIndex?: number };

/**
 * Rebuilds the Message object from Anthropic stream events, then reads it with the same reader as
 * a non-streamed response, so both paths give identical results.
 */
export class AnthropicStreamAccumulator {
  #message: { id: string; model: string; usage: AnthropicUsage } | undefined;
  #stopReason: string | undefined;
  #usage: AnthropicUsage = {};
  #toolCount = 0;
  #stopped = false;
  readonly #blocks: OpenBlock[] = [];
  readonly #onDelta: ((delta: StreamDelta) => void) | undefined;

  constructor(onDelta?: (delta: StreamDelta) => void) {
    this.#onDelta = onDelta;
  }

  add(raw: unknown): void {
    const event = parseWire(AnthropicEvent, raw, ANTHROPIC_PROVIDER, 'stream event');
    switch (event.type) {
      case 'message_start':
        if (!event.message) throw malformedResponse(ANTHROPIC_PROVIDER, 'message_start without a message');
        this.#message = event.message;
        this.#usage = { ...event.message.usage };
        break;
      case 'content_block_start':
        this.#start(event);
        break;
      case 'content_block_delta':
        this.#delta(event);
        break;
      case 'message_delta':
        if (event.delta?.stop_reason) this.#stopReason = event.delta.stop_reason;
        if (event.usage) this.#usage = { ...this.#usage, ...definedFields(event.usage) };
        break;
      case 'message_stop':
        this.#stopped = true;
        break;
    }
  }

  #start(event: AnthropicEvent): void {
    const block = event.content_block;
    if (!block || event.index == null)
      throw malformedResponse(ANTHROPIC_PROVIDER, 'content_block_start without a block');
    const isTool = block.type === 'tool_use';
    this.#blocks[event.index] = {
      raw: { ...block },
      partialJson: '',
      ...(isTool ? { toolIndex: this.#toolCount++ } : {}),
    };
    if (isTool) {
      const { id, name } = block as { id?: string; name?: string };
      this.#onDelta?.({
        type: 'tool_call',
        index: this.#toolCount - 1,
        ...(id ? { id } : {}),
        ...(name ? { name } : {}),
        argumentsDelta: '',
      });
    }
  }

  #delta(event: AnthropicEvent): void {
    const block = event.index == null ? undefined : this.#blocks[event.index];
    const delta = event.delta;
    if (!block || !delta)
      throw malformedResponse(ANTHROPIC_PROVIDER, 'content_block_delta for a block that was not started');
    const raw = block.raw;
    if (delta.type === 'text_delta' && delta.text) {
      raw['text'] = `${String(raw['text'] ?? '')}${delta.text}`;
      this.#onDelta?.({ type: 'text', text: delta.text });
    } else if (delta.type === 'thinking_delta' && delta.thinking) {
      raw['thinking'] = `${String(raw['thinking'] ?? '')}${delta.thinking}`;
      this.#onDelta?.({ type: 'reasoning', text: delta.thinking });
    } else if (delta.type === 'signature_delta' && delta.signature) {
      raw['signature'] = `${String(raw['signature'] ?? '')}${delta.signature}`;
    } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
      block.partialJson += delta.partial_json;
      if (block.toolIndex !== undefined) {
        this.#onDelta?.({ type: 'tool_call', index: block.toolIndex, argumentsDelta: delta.partial_json });
      }
    }
  }

  finish(): ProviderResult {
    if (!this.#message) throw malformedResponse(ANTHROPIC_PROVIDER, 'the stream had no message_start');
    if (!this.#stopped) throw malformedResponse(ANTHROPIC_PROVIDER, 'the stream ended before message_stop');
    const content = this.#blocks.filter(Boolean).map((block) => {
      if (block.raw['type'] !== 'tool_use') return block.raw;
      const input = parseJsonObject(block.partialJson);
      if (!input)
        throw malformedResponse(ANTHROPIC_PROVIDER, `tool_use input is not a JSON object: ${block.partialJson}`);
      return { ...block.raw, input };
    });
    return readAnthropicMessage({
      ...this.#message,
      content,
      stop_reason: this.#stopReason ?? null,
      usage: this.#usage,
    });
  }
}

function definedFields(usage: AnthropicUsage): AnthropicUsage {
  return Object.fromEntries(Object.entries(usage).filter(([, value]) => value !== null && value !== undefined));
}
