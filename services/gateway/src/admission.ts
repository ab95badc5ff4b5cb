import { ApiError } from './api-error.js';
import type { ConversationIndex } from './conversation-index.js';
import type { RunQueue } from './run-queue.js';

export type Admission = {
  readonly maxRunning: number;
  readonly maxRunningPerTenant: number;
  /**
   * Where runs past `maxRunningPerTenant` wait for a slot, in order (the queue every gateway
   * shares). Without it they are refused with 429, as runs past `maxRunning` always are.
   */
  readonly runQueue?: RunQueue;
  /** Messages waiting in one conversation's command line on this gateway before more are refused with 429 (0 = no limit). */
  readonly maxQueuedMessages?: number;
};

/**
 * Whether one more run of the tenant may start now: 429 past the deployment's capacity; past the
 * tenant's limit (or behind runs of the tenant already waiting: they keep their order) 'queue'
 * when a run queue is configured, else 429.
 */
export function admitRun(admission: Admission, index: ConversationIndex, tenant: string): 'start' | 'queue' {
  const { maxRunning, maxRunningPerTenant, runQueue } = admission;
  const tenantFull =
    maxRunningPerTenant > 0 && (index.running(tenant) >= maxRunningPerTenant || (runQueue?.waiting(tenant) ?? 0) > 0);
  if (tenantFull && runQueue) return 'queue';
  if ((maxRunning > 0 && index.running() >= maxRunning) || tenantFull) {
    throw new ApiError(
      429,
      'capacity_exhausted',
      'Run capacity is exhausted: retry after the given delay, or send the message without run.',
      undefined,
      5,
    );
  }
  return 'start';
}
