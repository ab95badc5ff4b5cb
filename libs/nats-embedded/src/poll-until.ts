import { setTimeout as sleep } from 'node:timers/promises';
import { NatsEmbeddedError, NatsEmbeddedErrorCode } from './nats-embedded-error.js';

/** What one look at a condition found: the value once it holds, or why it does not hold yet. */
export type Observation<T> =
  { readonly done: true; readonly value: T } | { readonly done: false; readonly reason: string };

/**
 * Looks at a condition every `intervalMs` until it holds, and gives up after `timeoutMs`
 * with an error naming what it waited for and what it saw last.
 */
export async function pollUntil<T>(
  description: string,
  observe: () => Promise<Observation<T>>,
  timeoutMs: number,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const observation = await observe();
    if (observation.done) return observation.value;
    if (Date.now() >= deadline) {
      throw new NatsEmbeddedError(
        NatsEmbeddedErrorCode.timedOut,
        `timed out after ${timeoutMs} ms waiting for ${description}; last seen: ${observation.reason}`,
      );
    }
    await sleep(intervalMs);
  }
}
