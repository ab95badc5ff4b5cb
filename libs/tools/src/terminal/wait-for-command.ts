import type { BashSession } from './bash-session.js';

/** Why waiting for a command stopped. */
export type WaitOutcome = 'completed' | 'soft_timeout' | 'max_wait' | 'hard_timeout' | 'cancelled' | 'over_quota';

export type WaitLimits = {
  /** Return once nothing new was printed for this long (absent with a hard timeout). */
  readonly softTimeoutMs?: number;
  /** Interrupt the command after this long. */
  readonly hardTimeoutMs?: number;
  /** Never wait longer than this in one call, even while output keeps coming. */
  readonly maxWaitMs: number;
  readonly signal: AbortSignal;
  /** Whether the workspace went over its size quota (checked about once a second). */
  readonly overQuota?: () => Promise<boolean>;
};

const TICK_MS = 200;
const QUOTA_CHECK_MS = 1_000;

export async function waitForCommand(session: BashSession, limits: WaitLimits): Promise<WaitOutcome> {
  const start = Date.now();
  let nextQuotaCheck = start + QUOTA_CHECK_MS;
  for (;;) {
    if (session.completed || session.state === 'exited') return 'completed';
    const now = Date.now();
    if (limits.signal.aborted) return 'cancelled';
    if (limits.overQuota && now >= nextQuotaCheck) {
      if (await limits.overQuota()) return 'over_quota';
      nextQuotaCheck = Date.now() + QUOTA_CHECK_MS;
    }
    if (limits.hardTimeoutMs !== undefined && now - start >= limits.hardTimeoutMs) return 'hard_timeout';
    if (limits.softTimeoutMs !== undefined && now - Math.max(session.lastActivity, start) >= limits.softTimeoutMs) {
      return 'soft_timeout';
    }
    if (now - start >= limits.maxWaitMs) return 'max_wait';
    await session.waitForChange(TICK_MS);
  }
}

/**
 * Stop the running command: SIGINT to its process group, then, if it is still
 * running after `graceMs`, SIGKILL to the whole session (the shell included).
 * Returns whether the shell had to be killed.
 */
export async function interruptCommand(session: BashSession, graceMs: number): Promise<{ killed: boolean }> {
  const finished = (): boolean => session.completed || session.state === 'exited';
  const exited = (): boolean => session.state === 'exited';
  session.signal('SIGINT');
  const deadline = Date.now() + graceMs;
  while (!finished() && Date.now() < deadline) {
    await session.waitForChange(Math.min(TICK_MS, Math.max(1, deadline - Date.now())));
  }
  if (finished()) return { killed: false };
  session.signal('SIGKILL');
  const killDeadline = Date.now() + 2_000;
  while (!exited() && Date.now() < killDeadline) await session.waitForChange(TICK_MS);
  return { killed: true };
}
