import { randomBytes } from 'node:crypto';
import { Schedule } from '@flotilla/api';
import { TenantId } from '@flotilla/events';
import { z } from 'zod';

/**
 * A schedule as the schedules bucket holds it, under `<tenant>.<id>`: the source of truth for
 * listing and reading schedules and for deciding each run (the stream's definition only says when).
 */
export const StoredSchedule = Schedule.extend({
  v: z.literal(1),
  tenant: TenantId,
  /**
   * Grows at every pause and resume; the definition (and so every run it produces) carries it, so
   * a run produced before a pause is recognised as stale after a resume.
   */
  generation: z.number().int().nonnegative(),
  /** The stream sequence of the last run taken (0: none): a run delivered again is not taken twice. */
  handled_seq: z.number().int().nonnegative(),
  /**
   * The run being taken: recorded before its action, cleared with its outcome. A run delivered
   * again that finds itself here was interrupted half-way: its message is not sent a second time.
   */
  claimed_seq: z.number().int().positive().nullable(),
});
export type StoredSchedule = z.infer<typeof StoredSchedule>;

/** The bucket key of a schedule. */
export function scheduleKey(tenant: string, id: string): string {
  return `${tenant}.${id}`;
}

/** A fresh schedule id: `sch_` and 128 random bits. */
export function newScheduleId(): string {
  return `sch_${randomBytes(16).toString('hex')}`;
}

/** A stored value read back: the schedule, or undefined for one that does not parse or is not under its own key. */
export function parseStoredSchedule(key: string, value: Uint8Array): StoredSchedule | undefined {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(value).toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = StoredSchedule.safeParse(json);
  if (!parsed.success || scheduleKey(parsed.data.tenant, parsed.data.id) !== key) return undefined;
  return parsed.data;
}

/** The public view: everything but the bookkeeping. */
export function publicSchedule(schedule: StoredSchedule): Schedule {
  const {
    v: _v,
    tenant: _tenant,
    generation: _generation,
    handled_seq: _handled,
    claimed_seq: _claimed,
    ...visible
  } = schedule;
  return visible;
}
