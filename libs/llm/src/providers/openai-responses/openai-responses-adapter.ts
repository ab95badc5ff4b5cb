import type { OpenAI } from 'openai';
import type { ResponseCreateParamsBase } from 'openai/resources/responses/responses';
import { malformedResponse } from '../../core/errors.js';
import type { ProviderAdapter, ProviderCallContext, ProviderRequest, ProviderResult } from '../../core/provider-adapter.js';
import { readResponse, RESPONSES_PROVIDER } from './read-response.js';
import { ResponsesStreamAccumulator } from './responses-stream-accumulator.js';
import { toResponsesInput } from './to-responses-input.js';

export type OpenAIResponsesSettings = {
  readonly model: string;
  readonly reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
};

/** Stateless use of the Responses API: `store: false`, reasoning replayed as encrypted items. */
export class OpenAIResponsesAdapter implements ProviderAdapter {
  readonly name = RESPONSES_PROVIDER;
  readonly #client: OpenAI;
  readonly #settings: OpenAIResponsesSettings;

  constructor(client: OpenAI, settings: OpenAIResponsesSettings) {
    this.#client = client;
    this.#settings = settings;
  }

  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const params = this.#params(request);
    const options = { signal: context.signal };
    if (!context.stream) {
      const response = await this.#client.responses.create({ ...params, stream: false }, options).catch(sdkParseFailure);
      return readResponse(response);
    }
    const stream = await this.#client.responses.create({ ...params, stream: true }, options);
    const accumulator = new ResponsesStreamAccumulator(context.onDelta);
    for await (const event of stream) accumulator.add(event);
    if (context.signal.aborted) throw malformedResponse(RESPONSES_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }

  #params(request: ProviderRequest): ResponseCreateParamsBase {
    const { model, reasoningEffort } = this.#settings;
    const { instructions, input } = toResponsesInput(request.messages);
    return {
      model,
      input,
      store: false,
      ...(instructions === undefined ? {} : { instructions }),
      ...(request.tools.length > 0
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function' as const,
              name: tool.name,
              description: tool.description,
              parameters: { ...tool.parameters },
              strict: false,
            })),
          }
        : {}),
      ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      ...(reasoningEffort === undefined
        ? {}
        : { reasoning: { effort: reasoningEffort, summary: 'auto' as const }, include: ['reasoning.encrypted_content' as const] }),
      ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
    };
  }
}

/** The SDK post-processes response bodies (e.g. `output_text`) and throws a TypeError on a malformed one. */
function sdkParseFailure(error: unknown): never {
  if (error instanceof TypeError && !/fetch failed|terminated/i.test(error.message)) {
    throw malformedResponse(RESPONSES_PROVIDER, `the SDK could not read the response (${error.message})`, error);
  }
  throw error;
}
