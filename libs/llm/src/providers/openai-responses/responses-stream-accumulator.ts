import { streamFailure } from '../../core/classify-error.js';
import { malformedResponse } from '../../core/errors.js';
import type { StreamDelta } from '../../core/language-model.js';
import { parseWire } from '../../core/parse-wire.js';
import type { ProviderResult } from '../../core/provider-adapter.js';
import { readResponse, RESPONSES_PROVIDER } from './read-response.js';
import { ResponsesEvent } from './responses-wire.js';

/**
 * Emits deltas from Responses stream events; the result is read from the final
 * `response.completed` (or `response.incomplete`) object, exactly like a non-streamed call.
 */
export class ResponsesStreamAccumulator {
  #result: ProviderResult | undefined;
  readonly #toolIndexByOutput = new Map<number, number>();
  readonly #onDelta: ((delta: StreamDelta) => void) | undefined;

  constructor(onDelta?: (delta: StreamDelta) => void) {
    this.#onDelta = onDelta;
  }

  add(raw: unknown): void {
    const event = parseWire(ResponsesEvent, raw, RESPONSES_PROVIDER, 'stream event');
    switch (event.type) {
      case 'response.output_text.delta':
        if (event.delta) this.#onDelta?.({ type: 'text', text: event.delta });
        break;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        if (event.delta) this.#onDelta?.({ type: 'reasoning', text: event.delta });
        break;
      case 'response.output_item.added':
        if (event.item?.type === 'function_call') {
          const index = this.#toolIndexByOutput.size;
          this.#toolIndexByOutput.set(event.output_index ?? index, index);
          this.#onDelta?.({
            type: 'tool_call',
            index,
            ...(event.item.call_id ? { id: event.item.call_id } : {}),
            ...(event.item.name ? { name: event.item.name } : {}),
            argumentsDelta: '',
          });
        }
        break;
      case 'response.function_call_arguments.delta': {
        const index = this.#toolIndexByOutput.get(event.output_index ?? -1);
        if (index === undefined)
          throw malformedResponse(RESPONSES_PROVIDER, 'arguments delta for an unknown function call');
        if (event.delta) this.#onDelta?.({ type: 'tool_call', index, argumentsDelta: event.delta });
        break;
      }
      case 'response.completed':
      case 'response.incomplete':
        this.#result = readResponse(event.response);
        break;
      case 'response.failed':
        throw streamFailure(RESPONSES_PROVIDER, (event.response as { error?: unknown } | undefined)?.error);
      case 'error':
        throw streamFailure(RESPONSES_PROVIDER, { code: event.code, message: event.message });
    }
  }

  finish(): ProviderResult {
    if (!this.#result) throw malformedResponse(RESPONSES_PROVIDER, 'the stream ended before response.completed');
    return this.#result;
  }
}
