import { sleep } from './abort.js';
import type { RetryPolicy } from './config.js';
import { LlmError } from './errors.js';
import type { LlmLogger } from './logger.js';

export type RetryOptions = {
  readonly policy: RetryPolicy;
  readonly signal?: AbortSignal;
  readonly logger: LlmLogger;
  readonly random?: () => number;
  /** Called before every attempt after the first. */
  readonly onRetry?: (attempt: number, error: LlmError) => void;
};

/** Exponential backoff with jitter; a provider's Retry-After wins over the computed delay. */
export function backoffDelayMs(policy: RetryPolicy, failedAttempts: number, random: () => number): number {
  const exponential = policy.initialDelayMs * policy.multiplier ** (failedAttempts - 1);
  const capped = Math.min(policy.maxDelayMs, exponential);
  return Math.round(capped * (1 - policy.jitter * random()));
}

export async function withRetries<T>(
  run: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<{ readonly value: T; readonly attempts: number }> {
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return { value: await run(attempt), attempts: attempt };
    } catch (error) {
      if (!(error instanceof LlmError) || !error.isRetryable || attempt >= options.policy.maxAttempts) throw error;
      if (error.retryAfterMs !== undefined && error.retryAfterMs > options.policy.maxRetryAfterMs) throw error;
      const delayMs = error.retryAfterMs ?? backoffDelayMs(options.policy, attempt, random);
      options.logger.warn(
        { code: error.code, status: error.status, attempt, delayMs, provider: error.provider },
        `LLM call failed, retrying: ${error.message}`,
      );
      await sleep(delayMs, options.signal);
      options.onRetry?.(attempt + 1, error);
    }
  }
}
