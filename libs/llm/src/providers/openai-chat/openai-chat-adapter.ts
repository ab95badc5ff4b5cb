import type { OpenAI } from 'openai';
import type { ChatCompletionCreateParamsBase } from 'openai/resources/chat/completions';
import { malformedResponse } from '../../core/errors.js';
import type { ProviderAdapter, ProviderCallContext, ProviderRequest, ProviderResult } from '../../core/provider-adapter.js';
import { ChatStreamAccumulator } from './chat-stream-accumulator.js';
import { CHAT_PROVIDER, readChatCompletion } from './read-chat-completion.js';
import { toChatMessages } from './to-chat-messages.js';

export type OpenAIChatSettings = {
  readonly model: string;
  /** Official OpenAI takes `max_completion_tokens`; compatible servers get `max_tokens`. */
  readonly officialOpenAI: boolean;
  readonly reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
};

export class OpenAIChatAdapter implements ProviderAdapter {
  readonly name = CHAT_PROVIDER;
  readonly #client: OpenAI;
  readonly #settings: OpenAIChatSettings;

  constructor(client: OpenAI, settings: OpenAIChatSettings) {
    this.#client = client;
    this.#settings = settings;
  }

  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const params = this.#params(request);
    const options = { signal: context.signal };
    if (!context.stream) {
      const completion = await this.#client.chat.completions.create({ ...params, stream: false }, options);
      return readChatCompletion(completion);
    }
    const stream = await this.#client.chat.completions.create(
      { ...params, stream: true, stream_options: { include_usage: true } },
      options,
    );
    const accumulator = new ChatStreamAccumulator(context.onDelta);
    for await (const chunk of stream) accumulator.add(chunk);
    // The SDK ends iteration quietly when aborted; never mistake that for a complete response.
    if (context.signal.aborted) throw malformedResponse(CHAT_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }

  #params(request: ProviderRequest): ChatCompletionCreateParamsBase {
    const { model, officialOpenAI, reasoningEffort } = this.#settings;
    return {
      model,
      messages: toChatMessages(request.messages),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function' as const,
              function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } },
            })),
          }
        : {}),
      ...(request.maxOutputTokens === undefined
        ? {}
        : officialOpenAI
          ? { max_completion_tokens: request.maxOutputTokens }
          : { max_tokens: request.maxOutputTokens }),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      ...(reasoningEffort === undefined ? {} : { reasoning_effort: reasoningEffort }),
      ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    };
  }
}
