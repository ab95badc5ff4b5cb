import { newId, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from './conversation-ref.js';
import { LogError, isConflict } from './errors.js';
import type { EventLog } from './event-log.js';
import type { StoredCommit, Tail } from './stored-commit.js';

export type AppendWithRetryOptions = {
  /** Re-decisions after conflicts before giving up. Default 50. */
  readonly maxConflicts?: number;
  /** Give up on transient failures after this long. Default 30 s. */
  readonly transientBudgetMs?: number;
  readonly signal?: AbortSignal;
};

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The writer's loop: read the tail, decide what to append from it, append expecting that
 * tail. On a conflict, re-read and re-decide (a fresh commit id); on a transient failure,
 * retry the very same commit (same id, same expected tail) so a lost ack never duplicates.
 * `decide` returns null to append nothing. Returns the appended commit, or null.
 */
export async function appendWithRetry(
  log: EventLog,
  ref: ConversationRef,
  decide: (tail: Tail) => Promise<readonly EventDraft[] | null> | readonly EventDraft[] | null,
  options: AppendWithRetryOptions = {},
): Promise<StoredCommit | null> {
  const maxConflicts = options.maxConflicts ?? 50;
  const deadline = Date.now() + (options.transientBudgetMs ?? 30_000);
  let backoff = 20;
  const pause = async (): Promise<void> => {
    await delay(backoff + Math.random() * backoff);
    backoff = Math.min(backoff * 2, 1_000);
  };
  for (let conflicts = 0; ; ) {
    options.signal?.throwIfAborted();
    let tail: Tail;
    try {
      tail = await log.tail(ref);
    } catch (error) {
      if (error instanceof LogError && error.isRetryable && Date.now() < deadline) {
        await pause();
        continue;
      }
      throw error;
    }
    const drafts = await decide(tail);
    if (drafts === null || drafts.length === 0) return null;
    const commitId = newId();
    for (;;) {
      options.signal?.throwIfAborted();
      try {
        return await log.append(ref, drafts, { expected: tail, commitId });
      } catch (error) {
        if (isConflict(error)) break;
        if (error instanceof LogError && error.isRetryable && Date.now() < deadline) {
          await pause();
          continue;
        }
        throw error;
      }
    }
    conflicts += 1;
    if (conflicts > maxConflicts) {
      throw new LogError('conflict', `gave up on ${ref.tenant}/${ref.conversation} after ${maxConflicts} conflicting appends`);
    }
    await delay(Math.random() * Math.min(5 * conflicts, 50));
  }
}
