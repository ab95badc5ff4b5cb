import { inSpan, SpanKind } from '@flotilla/tracing';
import { parseToolCallText } from '../prompt-tools/parse-tool-calls.js';
import { attemptSignal, raceAbort, throwIfCancelled } from './abort.js';
import { classifyError } from './classify-error.js';
import type { LlmConfig } from './config.js';
import { computeCostUsd } from './cost.js';
import { cancelledError, LlmError } from './errors.js';
import type {
  GenerateOptions,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  ModelInfo,
  StreamDelta,
} from './language-model.js';
import type { LlmLogger } from './logger.js';
import type { ProviderAdapter, ProviderResult } from './provider-adapter.js';
import { toProviderRequest } from './provider-request.js';
import { textContent } from './provider-adapter.js';
import { ReplySizeLimit } from './reply-size.js';
import { withRetries } from './retry.js';

export type ManagedLanguageModelOptions = {
  readonly adapter: ProviderAdapter;
  readonly config: LlmConfig;
  readonly logger: LlmLogger;
  /** Source of jitter; injectable for deterministic tests. */
  readonly random?: () => number;
};

/**
 * Wraps one provider adapter with everything that is the same for every provider: prompt-based
 * tool calling, per-attempt timeouts, the bound on a reply's size, cancellation, retries, latency and cost.
 */
export class ManagedLanguageModel implements LanguageModel {
  readonly info: ModelInfo;
  readonly #options: ManagedLanguageModelOptions;

  constructor(options: ManagedLanguageModelOptions) {
    this.#options = options;
    const { config } = options;
    this.info = {
      provider: config.provider,
      model: config.model,
      nativeToolCalling: config.nativeToolCalling,
      vision: config.vision,
      ...(config.contextWindow === undefined ? {} : { contextWindow: config.contextWindow }),
      ...(config.maxInputTokens === undefined ? {} : { maxInputTokens: config.maxInputTokens }),
      ...(config.maxOutputTokens === undefined ? {} : { maxOutputTokens: config.maxOutputTokens }),
    };
  }

  /** One model call, retries included; a span (`chat <model>`, GenAI attributes) when the process traces. */
  generate(request: GenerateRequest, options: GenerateOptions = {}): Promise<GenerateResult> {
    const { adapter, config } = this.#options;
    return inSpan(
      `chat ${config.model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.system': adapter.name,
          'gen_ai.request.model': config.model,
        },
      },
      async (span) => {
        const result = await this.#generate(request, options);
        span?.setAttributes({
          'gen_ai.response.model': result.model,
          'gen_ai.response.id': result.responseId,
          'gen_ai.response.finish_reasons': [result.finishReason],
          'gen_ai.usage.input_tokens': result.usage.inputTokens,
          'gen_ai.usage.output_tokens': result.usage.outputTokens,
          'flotilla.llm.attempts': result.attempts,
        });
        return result;
      },
    );
  }

  async #generate(request: GenerateRequest, options: GenerateOptions): Promise<GenerateResult> {
    const { adapter, config, logger } = this.#options;
    throwIfCancelled(options.signal);
    const started = performance.now();
    const providerRequest = toProviderRequest(config, request);
    const stream = options.stream ?? options.onDelta !== undefined;
    let emitted = false;
    const { value, attempts } = await withRetries(
      async () => {
        const attempt = attemptSignal(options.signal, config.timeoutMs);
        const size = new ReplySizeLimit(config.maxReplyChars, adapter.name);
        // every streamed delta is counted, whether or not the caller follows them; it throws past the
        // bound, out of the adapter's read loop, which closes the stream
        const onDelta = (delta: StreamDelta): void => {
          size.count(delta);
          if (!options.onDelta || attempt.signal.aborted) return;
          emitted = true;
          options.onDelta(delta);
        };
        const failure = (): LlmError =>
          attempt.timedOut() ? timeoutError(adapter.name, config.timeoutMs) : cancelledError(options.signal?.reason);
        try {
          const call = adapter.call(providerRequest, {
            signal: attempt.signal,
            stream,
            ...(stream ? { onDelta } : {}),
          });
          const value = await raceAbort(call, attempt.signal, failure);
          size.check(value);
          return value;
        } catch (error) {
          if (attempt.signal.aborted) throw failure();
          throw classifyError(error, adapter.name);
        } finally {
          attempt.dispose();
        }
      },
      {
        policy: config.retry,
        logger,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(this.#options.random ? { random: this.#options.random } : {}),
        onRetry: (attempt) => {
          if (!emitted) return;
          emitted = false;
          options.onDelta?.({ type: 'restart', attempt });
        },
      },
    );
    const result = config.nativeToolCalling ? value : extractPromptToolCalls(value);
    const latencyMs = Math.round(performance.now() - started);
    const costUsd = config.prices ? computeCostUsd(result.usage, config.prices) : undefined;
    logger.debug(
      { provider: adapter.name, model: result.model, latencyMs, attempts, usage: result.usage, costUsd },
      'LLM call finished',
    );
    return { ...result, latencyMs, attempts, ...(costUsd === undefined ? {} : { costUsd }) };
  }
}

function extractPromptToolCalls(result: ProviderResult): ProviderResult {
  const text = result.content.map((part) => part.text).join('');
  const parsed = parseToolCallText(text, result.responseId);
  if (parsed.toolCalls.length === 0) return result;
  const finishReason = result.finishReason === 'stop' ? 'tool_calls' : result.finishReason;
  return { ...result, content: textContent(parsed.text), toolCalls: parsed.toolCalls, finishReason };
}

function timeoutError(provider: string, timeoutMs: number): LlmError {
  return new LlmError('timeout', `${provider} did not answer within ${timeoutMs} ms.`, { provider });
}
