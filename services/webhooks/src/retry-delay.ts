/**
 * How long a delivery waits after its `failedAttempts`-th failure: exponential from `baseMs`
 * (base, 2×, 4×, …) capped at `maxMs`, with "equal jitter" (half the delay fixed, half random),
 * so receivers that fail together are not retried in lockstep, and never sooner than half the
 * schedule. The same policy shape as the model calls' retries (libs/llm backoffDelayMs with
 * jitter 0.5), applied to a delivery's JetStream redelivery instead of an in-process loop.
 */
export function retryDelayMs(
  failedAttempts: number,
  policy: { readonly baseMs: number; readonly maxMs: number },
  random: () => number = Math.random,
): number {
  const exponential = policy.baseMs * 2 ** Math.min(Math.max(failedAttempts - 1, 0), 40);
  const capped = Math.min(policy.maxMs, exponential);
  return Math.round(capped / 2 + (capped / 2) * random());
}
