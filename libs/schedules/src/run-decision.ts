import type { ScheduleRun } from '@flotilla/api';
import type { RunMessage } from './run-message.js';
import type { StoredSchedule } from './stored-schedule.js';

/** A run as the gateway got it: its stream sequence, its body, when it was due, and the server's announcement of the next one. */
export type DeliveredRun = {
  readonly seq: number;
  readonly message: RunMessage;
  readonly dueAt: Date;
  /** The `Nats-Schedule-Next` header: the next run's time, `purge` after a one-time schedule's run, absent on a gateway-made run. */
  readonly next: string | undefined;
};

export type RunDecision =
  /** Nothing to do: the schedule is gone or paused (its definition should be cancelled), the run is of an older generation, or it was taken already. */
  | { readonly kind: 'drop'; readonly reason: 'no_schedule' | 'paused' | 'stale' | 'taken' }
  /** Record it as skipped (`missed_runs: skip` and it came due longer than the grace ago). */
  | { readonly kind: 'skip'; readonly reason: string }
  /** It was claimed and its action started, then its gateway stopped: a message is not sent twice. */
  | { readonly kind: 'interrupted' }
  | { readonly kind: 'act' };

/**
 * What a gateway does with a run, from the schedule's record alone. Each run is taken once:
 * a run at or before the last one taken is dropped; a claimed run delivered again is interrupted
 * (creating a conversation is safe to redo, its id is derived from the run, so that is acted on again).
 */
export function decideRun(
  schedule: StoredSchedule | undefined,
  run: DeliveredRun,
  now: Date,
  graceMs: number,
): RunDecision {
  if (!schedule) return { kind: 'drop', reason: 'no_schedule' };
  if (run.message.generation !== schedule.generation) return { kind: 'drop', reason: 'stale' };
  if (run.seq <= schedule.handled_seq) return { kind: 'drop', reason: 'taken' };
  if (schedule.status !== 'active' && run.message.kind !== 'manual') return { kind: 'drop', reason: 'paused' };
  if (schedule.claimed_seq === run.seq)
    return schedule.action.type === 'send_message' ? { kind: 'interrupted' } : { kind: 'act' };
  const due = dueOf(schedule, run);
  const lateMs = now.getTime() - due.getTime();
  if (run.message.kind === 'scheduled' && schedule.missed_runs === 'skip' && lateMs > graceMs) {
    return {
      kind: 'skip',
      reason: `it came due at ${due.toISOString()}, ${Math.round(lateMs / 1000)} s before a gateway could take it (missed_runs: skip)`,
    };
  }
  return { kind: 'act' };
}

/**
 * When a run was due: the time a one-time schedule names (nats-server fires a past `@at` once
 * when it starts, late), else when the run was stored or, for a gateway-made run, the time it names.
 */
export function dueOf(schedule: StoredSchedule, run: DeliveredRun): Date {
  return run.message.kind === 'scheduled' && 'at' in schedule.when ? new Date(schedule.when.at) : run.dueAt;
}

/** The id of the conversation a `create_conversation` run creates: the same whenever the run is taken again. */
export function runConversationId(schedule: StoredSchedule, seq: number): string {
  return `${schedule.id}-${seq}`;
}

/** The schedule with the run's claim recorded (before its action). */
export function claimRun(schedule: StoredSchedule, seq: number, now: Date): StoredSchedule {
  return { ...schedule, claimed_seq: seq, updated_at: now.toISOString() };
}

/** The schedule after a run: its outcome, the count, and the next run as the server announced it (a one-time schedule's run completes it). */
export function recordRun(
  schedule: StoredSchedule,
  run: DeliveredRun,
  outcome: Omit<ScheduleRun, 'due_at' | 'handled_at'>,
  now: Date,
): StoredSchedule {
  const completed = run.next === 'purge';
  const announced = run.next !== undefined && !completed ? parseNext(run.next) : undefined;
  const next = completed ? null : (announced ?? (run.message.kind === 'caught_up' ? null : schedule.next_run_at));
  return {
    ...schedule,
    status: completed && schedule.status === 'active' ? 'completed' : schedule.status,
    next_run_at: schedule.status === 'paused' ? null : next,
    runs: schedule.runs + 1,
    handled_seq: Math.max(schedule.handled_seq, run.seq),
    claimed_seq: null,
    last_run: { due_at: dueOf(schedule, run).toISOString(), handled_at: now.toISOString(), ...outcome },
    updated_at: now.toISOString(),
  };
}

function parseNext(value: string): string | undefined {
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : new Date(time).toISOString();
}
