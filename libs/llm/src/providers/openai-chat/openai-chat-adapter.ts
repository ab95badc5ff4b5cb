import type { OpenAI } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
} from 'openai/resources/chat/completions';
import type { Stream } from 'openai/streaming';
import { malformedResponse } from '../../core/errors.js';
import { jsonBody } from '../../core/json-body.js';
import type {
  ProviderAdapter,
  ProviderCallContext,
  ProviderRequest,
  ProviderResult,
} from '../../core/provider-adapter.js';
import { ChatStreamAccumulator } from './chat-stream-accumulator.js';
import { CHAT_PROVIDER, readChatCompletion } from './read-chat-completion.js';
import { encodedChatMessages } from './to-chat-messages.js';

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

  /**
   * What `chat.completions.create` does, with the body `chatCompletionsBody` builds: the SDK sends
   * bytes it is given as they are, and still owns the headers, the errors and the stream.
   */
  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const body = chatCompletionsBody(this.#settings, request, context.stream);
    const options = { headers: { 'content-type': 'application/json' }, signal: context.signal };
    if (!context.stream) {
      const completion = await this.#client.post<ChatCompletion>('/chat/completions', {
        ...options,
        body,
        stream: false,
      });
      return readChatCompletion(completion);
    }
    const stream = await this.#client.post<Stream<ChatCompletionChunk>>('/chat/completions', {
      ...options,
      body,
      stream: true,
    });
    const accumulator = new ChatStreamAccumulator(context.onDelta);
    for await (const chunk of stream) accumulator.add(chunk);
    // The SDK ends iteration quietly when aborted; never mistake that for a complete response.
    if (context.signal.aborted) throw malformedResponse(CHAT_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }
}

/**
 * The body of a Chat Completions request, as sent: built from messages encoded once each (see
 * `jsonBody`). Pure: the same settings and request give the same bytes.
 */
export function chatCompletionsBody(settings: OpenAIChatSettings, request: ProviderRequest, stream: boolean): Buffer {
  const { model, ...rest } = chatParams(settings, request);
  const messages = encodedChatMessages(request.messages);
  return stream
    ? jsonBody({ model }, 'messages', messages, { ...rest, stream: true, stream_options: { include_usage: true } })
    : jsonBody({ model }, 'messages', messages, { ...rest, stream: false });
}

/** The request's parameters but its messages (sent apart, already encoded). */
function chatParams(
  settings: OpenAIChatSettings,
  request: ProviderRequest,
): Omit<ChatCompletionCreateParamsBase, 'messages'> {
  const { model, officialOpenAI, reasoningEffort } = settings;
  return {
    model,
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
