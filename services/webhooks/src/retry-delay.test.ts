import { describe, expect, it } from 'vitest';
import { retryDelayMs } from './retry-delay.js';

describe('the retry delay', () => {
  const policy = { baseMs: 1_000, maxMs: 60_000 };

  it('doubles after each failure, with half of it random, and is capped', () => {
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, policy, () => 1))).toEqual([
      1_000, 2_000, 4_000, 8_000,
    ]);
    expect([1, 2, 3, 4].map((failures) => retryDelayMs(failures, policy, () => 0))).toEqual([500, 1_000, 2_000, 4_000]);
    expect(retryDelayMs(7, policy, () => 1)).toBe(60_000);
    expect(retryDelayMs(1_000, policy, () => 0.5)).toBe(45_000);
  });

  it('spreads receivers that failed together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => retryDelayMs(3, policy)));
    expect(delays.size).toBeGreaterThan(10);
    for (const delay of delays) expect(delay).toBeGreaterThanOrEqual(2_000);
    for (const delay of delays) expect(delay).toBeLessThanOrEqual(4_000);
  });
});
