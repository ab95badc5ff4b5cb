/**
 * Token buckets per key: `perSecond` tokens a second, bursts of twice that. `take` returns 0
 * when a token was available, else the milliseconds until one will be. 0 per second = no limit.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(readonly perSecond: number) {}

  take(key: string): number {
    if (this.perSecond <= 0) return 0;
    const now = performance.now();
    const capacity = this.perSecond * 2;
    const bucket = this.#buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1_000) * this.perSecond);
    bucket.at = now;
    if (this.#buckets.size > 100_000) this.#buckets.clear();
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) / this.perSecond) * 1_000);
  }
}
