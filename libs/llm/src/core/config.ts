import { z } from 'zod';
import { LlmError } from './errors.js';

export const RetryPolicy = z
  .object({
    /** Total attempts including the first; 1 disables retries. */
    maxAttempts: z.number().int().min(1).max(20).default(5),
    initialDelayMs: z.number().int().min(0).default(1_000),
    maxDelayMs: z.number().int().min(0).default(30_000),
    multiplier: z.number().min(1).default(2),
    /** Fraction of each backoff delay that is randomised (0 = none, 1 = full jitter). */
    jitter: z.number().min(0).max(1).default(0.2),
    /** A Retry-After longer than this is not waited for: the error is thrown instead. */
    maxRetryAfterMs: z.number().int().min(0).default(60_000),
  })
  .strict();
export type RetryPolicy = z.infer<typeof RetryPolicy>;

export const ModelPrices = z
  .object({
    inputPerMillion: z.number().min(0),
    outputPerMillion: z.number().min(0),
    cacheReadPerMillion: z.number().min(0).optional(),
    cacheWritePerMillion: z.number().min(0).optional(),
  })
  .strict();
export type ModelPrices = z.infer<typeof ModelPrices>;

export const ReasoningEffort = z.enum(['minimal', 'low', 'medium', 'high']);
export type ReasoningEffort = z.infer<typeof ReasoningEffort>;

/** Serialisable configuration of one model endpoint. Secrets belong in `apiKeyEnv`, not `apiKey`. */
export const LlmConfig = z
  .object({
    provider: z.enum(['openai-chat', 'openai-responses', 'anthropic']),
    model: z.string().min(1),
    /** OpenAI-compatible servers (vLLM, Ollama, llama.cpp) or a proxy. */
    baseURL: z.url().optional(),
    apiKey: z.string().min(1).optional(),
    /**
     * Variable holding the key; defaults to OPENAI_API_KEY or ANTHROPIC_API_KEY. `false`: the
     * endpoint takes no key (a local server): no variable is read and a placeholder is sent.
     */
    apiKeyEnv: z.union([z.string().min(1), z.literal(false)]).optional(),
    /** Per-attempt timeout, streaming included. */
    timeoutMs: z.number().int().positive().default(300_000),
    /**
     * Characters one reply may hold (text, reasoning, tool names and arguments) before the call
     * fails with `reply_too_large`, not retried: what a runaway or never-ending stream may cost in
     * memory. The default is far above any model's output limit (128k tokens are about 0.5M
     * characters); `maxOutputTokens` is what asks the provider itself to stop sooner.
     */
    maxReplyChars: z.number().int().positive().default(4_000_000),
    retry: RetryPolicy.default(RetryPolicy.parse({})),
    maxOutputTokens: z.number().int().positive().optional(),
    temperature: z.number().min(0).max(2).optional(),
    reasoningEffort: ReasoningEffort.optional(),
    /** Anthropic extended thinking budget; derived from `reasoningEffort` when absent. */
    thinkingBudgetTokens: z.number().int().min(1024).optional(),
    prices: ModelPrices.optional(),
    /** false: describe tools in the system prompt and parse calls from text. */
    nativeToolCalling: z.boolean().default(true),
    /**
     * The model takes images (every provider path sends them in its own format). false for a
     * text-only model: a user message with images is refused before it reaches the log, and an
     * image already in the history (from an earlier model) is sent as a line of text saying so.
     */
    vision: z.boolean().default(true),
    /** Anthropic cache_control breakpoints and OpenAI prompt_cache_key. */
    promptCaching: z.boolean().default(true),
    /** Sent as OpenAI `prompt_cache_key` (e.g. per tenant or agent); never sent when unset. */
    promptCacheKey: z.string().min(1).optional(),
    contextWindow: z.number().int().positive().optional(),
    maxInputTokens: z.number().int().positive().optional(),
  })
  .strict();
export type LlmConfig = z.infer<typeof LlmConfig>;
export type LlmConfigInput = z.input<typeof LlmConfig>;

/** Validates a config at start-up; throws an `invalid_config` LlmError listing every problem. */
export function parseLlmConfig(input: unknown): LlmConfig {
  const parsed = LlmConfig.safeParse(input);
  if (!parsed.success) {
    throw new LlmError('invalid_config', `Invalid LLM config:\n${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}
