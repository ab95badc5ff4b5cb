import type { OpenAI } from 'openai';
import type { Response, ResponseCreateParamsBase, ResponseStreamEvent } from 'openai/resources/responses/responses';
import type { Stream } from 'openai/streaming';
import { malformedResponse } from '../../core/errors.js';
import { jsonBody } from '../../core/json-body.js';
import type {
  ProviderAdapter,
  ProviderCallContext,
  ProviderRequest,
  ProviderResult,
} from '../../core/provider-adapter.js';
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

  /**
   * What `responses.create` does, with the body `responsesBody` builds: the SDK sends bytes it is
   * given as they are, and still owns the headers, the errors and the stream.
   */
  async call(request: ProviderRequest, context: ProviderCallContext): Promise<ProviderResult> {
    const body = responsesBody(this.#settings, request, context.stream);
    const options = { headers: { 'content-type': 'application/json' }, signal: context.signal };
    if (!context.stream) {
      return readResponse(await this.#client.post<Response>('/responses', { ...options, body, stream: false }));
    }
    const stream = await this.#client.post<Stream<ResponseStreamEvent>>('/responses', {
      ...options,
      body,
      stream: true,
    });
    const accumulator = new ResponsesStreamAccumulator(context.onDelta);
    for await (const event of stream) accumulator.add(event);
    if (context.signal.aborted) throw malformedResponse(RESPONSES_PROVIDER, 'the stream was aborted');
    return accumulator.finish();
  }
}

/**
 * The body of a Responses request, as sent: built from input items encoded once per message (see
 * `jsonBody`). Pure: the same settings and request give the same bytes.
 */
export function responsesBody(settings: OpenAIResponsesSettings, request: ProviderRequest, stream: boolean): Buffer {
  const { model, ...rest } = responsesParams(settings, request);
  const { instructions, input } = toResponsesInput(request.messages);
  const tail = { ...rest, ...(instructions === undefined ? {} : { instructions }) };
  return jsonBody({ model }, 'input', input, { ...tail, stream });
}

/** The request's parameters but its input and instructions (sent apart, the input already encoded). */
function responsesParams(
  settings: OpenAIResponsesSettings,
  request: ProviderRequest,
): Omit<ResponseCreateParamsBase, 'input' | 'instructions'> {
  const { model, reasoningEffort } = settings;
  return {
    model,
    store: false,
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
      : {
          reasoning: { effort: reasoningEffort, summary: 'auto' as const },
          include: ['reasoning.encrypted_content' as const],
        }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
  };
}
