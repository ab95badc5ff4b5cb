import { Anthropic } from '@anthropic-ai/sdk';
import type { MessageCreateParamsBase } from '@anthropic-ai/sdk/resources/messages';
import { malformedResponse } from '../../core/errors.js';
import { httpFetch } from '../../core/http-fetch.js';
import type { ProviderAdapter, ProviderCallContext, ProviderRequest, ProviderResult } from '../../core/provider-adapter.js';
import { AnthropicStreamAccumulator } from './anthropic-stream-accumulator.js';
import { ANTHROPIC_PROVIDER, readAnthropicMessage } from './read-anthropic-message.js';
import { toAnthropicPrompt } from './to-anthropic-messages.js';

export type AnthropicSettings = {
  readonly model: string;
  readonly maxOutputTokens: number;
  /** Extended thinking budget; thinking is off when undefined. */
  readonly thinkingBudgetTokens?: number;
  readonly promptCaching: boolean;
};

export type AnthropicClientSettings = { readonly apiKey: string; readonly baseURL?: string; readonly fetch?: typeof fetch };

/** An Anthropic SDK client whose own retries and logging are off: ours are the only policy. */
export function createAnthropicClient(settings: AnthropicClientSettings): Anthropic {
  return new Anthropic({
    apiKey: settings.apiKey,
    ...(settings.baseURL === undefined ? {} : { baseURL: settings.baseURL }),
    fetch: settings.fetch ?? httpFetch,
    maxRetries: 0,
    timeout: 24 * 60 * 60 * 1000,
    logLevel: 'off',
  });
}

export class AnthropicAdapter implements ProviderAdapter {
  readonly name = ANTHROPIC_PROVIDER;
  readonly #client: Anthropic;
  readonly #settings: AnthropicSettings;

  constructor(client: Anthropic, settings: AnthropicSettings) {
    this.#client = client;
    this.#settings = settings;
  }

  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const params = this.#params(request);
    const options = { signal: context.signal };
    if (!context.stream) {
      return readAnthropicMessage(await this.#client.messages.create({ ...params, stream: false }, options));
    }
    const stream = await this.#client.messages.create({ ...params, stream: true }, options);
    const accumulator = new AnthropicStreamAccumulator(context.onDelta);
    for await (const event of stream) accumulator.add(event);
    if (context.signal.aborted) throw malformedResponse(ANTHROPIC_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }

  #params(request: ProviderRequest): MessageCreateParamsBase {
    const { model, thinkingBudgetTokens, promptCaching } = this.#settings;
    const { system, messages } = toAnthropicPrompt(request.messages, promptCaching);
    const requested = request.maxOutputTokens ?? this.#settings.maxOutputTokens;
    // Thinking tokens count toward max_tokens, which must exceed the budget.
    const maxTokens = thinkingBudgetTokens === undefined ? requested : Math.max(requested, thinkingBudgetTokens + 1024);
    return {
      model,
      max_tokens: maxTokens,
      messages,
      ...(system === undefined ? {} : { system }),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              input_schema: { type: 'object' as const, ...tool.parameters },
            })),
          }
        : {}),
      ...(thinkingBudgetTokens === undefined
        ? request.temperature === undefined
          ? {}
          : { temperature: request.temperature }
        : { thinking: { type: 'enabled' as const, budget_tokens: thinkingBudgetTokens } }),
    };
  }
}
