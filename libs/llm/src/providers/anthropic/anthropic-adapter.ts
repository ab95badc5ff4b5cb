import { Anthropic } from '@anthropic-ai/sdk';
import type { Stream } from '@anthropic-ai/sdk/core/streaming';
import type { Message, MessageCreateParamsBase, RawMessageStreamEvent } from '@anthropic-ai/sdk/resources/messages';
import { malformedResponse } from '../../core/errors.js';
import { httpFetchFor } from '../../core/http-fetch.js';
import { jsonBody } from '../../core/json-body.js';
import type {
  ProviderAdapter,
  ProviderCallContext,
  ProviderRequest,
  ProviderResult,
} from '../../core/provider-adapter.js';
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

export type AnthropicClientSettings = {
  readonly apiKey: string;
  readonly baseURL?: string;
  readonly fetch?: typeof fetch;
};

/**
 * An Anthropic SDK client whose own retries and logging are off: ours are the only policy. Without
 * a `fetch` of its own it goes through the proxies the process environment names now (HTTPS_PROXY,
 * HTTP_PROXY, NO_PROXY).
 */
export function createAnthropicClient(settings: AnthropicClientSettings): Anthropic {
  return new Anthropic({
    apiKey: settings.apiKey,
    ...(settings.baseURL === undefined ? {} : { baseURL: settings.baseURL }),
    fetch: settings.fetch ?? httpFetchFor(process.env),
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

  /**
   * What `messages.create` does for our requests, with the body `anthropicMessagesBody` builds: the
   * SDK sends bytes it is given as they are, and still owns the headers, the errors and the stream.
   * (What `create` adds besides, deprecation warnings, headers for profile and workspace ids we
   * never set, and tracing spans we never enable, is not needed.)
   */
  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const body = anthropicMessagesBody(this.#settings, request, context.stream);
    const options = { headers: { 'content-type': 'application/json' }, signal: context.signal };
    if (!context.stream) {
      return readAnthropicMessage(
        await this.#client.post<Message>('/v1/messages', { ...options, body, stream: false }),
      );
    }
    const stream = await this.#client.post<Stream<RawMessageStreamEvent>>('/v1/messages', {
      ...options,
      body,
      stream: true,
    });
    const accumulator = new AnthropicStreamAccumulator(context.onDelta);
    for await (const event of stream) accumulator.add(event);
    if (context.signal.aborted) throw malformedResponse(ANTHROPIC_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }
}

/**
 * The body of a Messages request, as sent: built from turns encoded once per message (see
 * `jsonBody`). Pure: the same settings and request give the same bytes.
 */
export function anthropicMessagesBody(settings: AnthropicSettings, request: ProviderRequest, stream: boolean): Buffer {
  const { model, max_tokens: maxTokens, ...rest } = anthropicParams(settings, request);
  const { system, messages } = toAnthropicPrompt(request.messages, settings.promptCaching);
  const tail = { ...(system === undefined ? {} : { system }), ...rest };
  return jsonBody({ model, max_tokens: maxTokens }, 'messages', messages, { ...tail, stream });
}

/** The request's parameters but its messages and system prompt (sent apart, the messages already encoded). */
function anthropicParams(
  settings: AnthropicSettings,
  request: ProviderRequest,
): Omit<MessageCreateParamsBase, 'messages' | 'system'> {
  const { model, thinkingBudgetTokens } = settings;
  const requested = request.maxOutputTokens ?? settings.maxOutputTokens;
  // Thinking tokens count toward max_tokens, which must exceed the budget.
  const maxTokens = thinkingBudgetTokens === undefined ? requested : Math.max(requested, thinkingBudgetTokens + 1024);
  return {
    model,
    max_tokens: maxTokens,
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
