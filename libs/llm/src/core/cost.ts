import type { Usage } from './language-model.js';

/** Prices in US dollars per million tokens. Cache prices default to the input price. */
export type Prices = {
  readonly inputPerMillion: number;
  readonly outputPerMillion: number;
  readonly cacheReadPerMillion?: number;
  readonly cacheWritePerMillion?: number;
};

export function computeCostUsd(usage: Usage, prices: Prices): number {
  const uncachedInput = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
  const cacheRead = prices.cacheReadPerMillion ?? prices.inputPerMillion;
  const cacheWrite = prices.cacheWritePerMillion ?? prices.inputPerMillion;
  const micro =
    uncachedInput * prices.inputPerMillion +
    usage.cacheReadTokens * cacheRead +
    usage.cacheWriteTokens * cacheWrite +
    usage.outputTokens * prices.outputPerMillion;
  return micro / 1_000_000;
}
