import { isOutage, type LlmError } from './errors.js';
import type {
  GenerateOptions,
  GenerateRequest,
  GenerateResult,
  LanguageModel,
  ModelName,
  StreamDelta,
} from './language-model.js';

/** A model of a fallback chain, and the operator's profile it is, when it is one. */
export type ChainedModel = { readonly model: LanguageModel; readonly profile?: string };

/** A fallback taken: the model whose provider was out, the model the call moves to, and the failure that moved it. */
export type FallbackTaken = { readonly from: ModelName; readonly to: ModelName; readonly error: LlmError };

export type FallbackOptions = {
  /** Told of each fallback taken, before the next model is called (a service counts and logs them). */
  readonly onFallback?: (taken: FallbackTaken) => void;
};

/**
 * A model that makes each call on `primary` and, when its provider is out (`isOutage`: a 5xx or
 * an overload, a 429, a timeout, a broken connection, no quota left) once that model's own
 * retries are spent, makes the same call on each of `fallbacks` in turn until one answers; the
 * answer says which fallback made it (`GenerateResult.fallback`). Any other failure (a request
 * refused, a cancellation), and the last model's outage, fails the call as it is. A fallback's own
 * fallbacks are not followed: the chain is the list given. Deltas streamed by a model that then
 * failed are withdrawn (`restart`) before the next model's. Its info is the primary's.
 */
export function withFallbacks(
  primary: ChainedModel,
  fallbacks: readonly ChainedModel[],
  options: FallbackOptions = {},
): LanguageModel {
  if (fallbacks.length === 0) return primary.model;
  const chain = [primary, ...fallbacks];
  return {
    info: primary.model.info,
    async generate(request: GenerateRequest, generateOptions: GenerateOptions = {}): Promise<GenerateResult> {
      const { onDelta } = generateOptions;
      let streamed = false;
      const callOptions: GenerateOptions = onDelta
        ? {
            ...generateOptions,
            onDelta: (delta: StreamDelta) => {
              streamed = true;
              onDelta(delta);
            },
          }
        : generateOptions;
      for (let position = 0; ; position += 1) {
        const current = chain[position]!;
        try {
          const result = await current.model.generate(request, callOptions);
          return position === 0 ? result : { ...result, fallback: { index: position - 1, ...nameOf(current) } };
        } catch (error) {
          const next = chain[position + 1];
          if (next === undefined || !isOutage(error)) throw error;
          options.onFallback?.({ from: nameOf(current), to: nameOf(next), error });
          if (streamed) {
            streamed = false;
            // the chain's next model is its `position + 2`-th: what it streams replaces what came before
            onDelta?.({ type: 'restart', attempt: position + 2 });
          }
        }
      }
    },
  };
}

function nameOf({ model, profile }: ChainedModel): ModelName {
  return { provider: model.info.provider, model: model.info.model, ...(profile === undefined ? {} : { profile }) };
}
