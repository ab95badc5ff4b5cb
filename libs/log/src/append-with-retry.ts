import { newId, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from './conversation-ref.js';
import { LogError, isConflict } from './errors.js';
import type { EventLog } from './event-log.js';
import type { AppendOptions } from './event-log-options.js';
import type { StoredCommit, Tail } from './stored-commit.js';

export type AppendWithRetryOptions = {
  /** Re-decisions after conflicts before giving up. Default 50. */
  readonly maxConflicts?: number;
  /** Give up on transient failures after this long. Default 30 s. */
  readonly transientBudgetMs?: number;
  readonly signal?: AbortSignal;
};

export type AppendSurelyOptions = AppendOptions & {
  /** Until when (epoch ms) a transient failure is retried. Default 30 s from now. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
};

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits before the next try: 20 ms, doubling to 1 s, with jitter. */
function backoff(): () => Promise<void> {
  let next = 20;
  return async () => {
    await delay(next + Math.random() * next);
    next = Math.min(next * 2, 1_000);
  };
}

/**
 * Appends one commit; on a transient failure (an answer lost to a restart or a leader election,
 * JetStream busy) appends the very same commit again (same id, same expected tail) until the
 * deadline. A repeat of a commit already stored is refused by the stream as a conflict and answered
 * by `EventLog.append` with the stored commit (found right after the expected tail under its id),
 * so when this returns, a commit whose first answer was lost is known to be stored, once. A
 * conflict, or a failure retrying cannot fix, is thrown; so is the last transient failure at the
 * deadline.
 */
export async function appendSurely(
  log: EventLog,
  ref: ConversationRef,
  drafts: readonly EventDraft[],
  options: AppendSurelyOptions,
): Promise<StoredCommit> {
  const deadline = options.deadline ?? Date.now() + 30_000;
  const commitId = options.commitId ?? newId();
  const pause = backoff();
  for (;;) {
    options.signal?.throwIfAborted();
    try {
      return await log.append(ref, drafts, {
        expected: options.expected,
        commitId,
        ...(options.beforePublish ? { beforePublish: options.beforePublish } : {}),
      });
    } catch (error) {
      if (isConflict(error) || !(error instanceof LogError && error.isRetryable) || Date.now() >= deadline) throw error;
      await pause();
    }
  }
}

/**
 * The writer's loop: read the tail, decide what to append from it, append expecting that
 * tail. On a conflict, re-read and re-decide (a fresh commit id); on a transient failure,
 * retry the very same commit (`appendSurely`) so a lost answer never duplicates.
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
  const pause = backoff();
  for (let conflicts = 0; ;) {
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
    try {
      return await appendSurely(log, ref, drafts, {
        expected: tail,
        deadline,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    conflicts += 1;
    if (conflicts > maxConflicts) {
      throw new LogError(
        'conflict',
        `gave up on ${ref.tenant}/${ref.conversation} after ${maxConflicts} conflicting appends`,
      );
    }
    await delay(Math.random() * Math.min(5 * conflicts, 50));
  }
}
