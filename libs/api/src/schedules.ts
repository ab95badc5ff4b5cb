import { ConversationId, SpecName, Timestamp } from '@flotilla/events';
import { z } from 'zod';
import { MessageText } from './requests.js';
import { Tags, Title } from './resources.js';

/** A tenant has at most this many schedules (paused ones count). */
export const MAX_SCHEDULES_PER_TENANT = 100;

export const ScheduleId = z.string().regex(/^sch_[0-9a-f]{32}$/, 'is not a schedule id (sch_ and 32 hex digits)');

/** True for a name the runtime's time-zone database knows (`Europe/Paris`, `UTC`, …). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** nats-server's predefined cron schedules. */
export const PREDEFINED_SCHEDULES = [
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@midnight',
  '@hourly',
] as const;

/**
 * A cron expression as nats-server takes it: six fields, `second minute hour day-of-month month
 * day-of-week` (e.g. `0 30 9 * * MON-FRI`), or a predefined one (`@daily`). The server checks
 * the fields' values; this checks their shape.
 */
export const CronExpression = z
  .string()
  .max(200)
  .refine(
    (value) =>
      (PREDEFINED_SCHEDULES as readonly string[]).includes(value) ||
      /^[0-9A-Za-z*?,/-]+( [0-9A-Za-z*?,/-]+){5}$/.test(value),
    `must be six space-separated fields (second minute hour day-of-month month day-of-week, e.g. "0 30 9 * * MON-FRI") or one of ${PREDEFINED_SCHEDULES.join(', ')}`,
  );

/** An interval: a whole number of seconds, minutes or hours (`30s`, `5m`, `2h`). */
export const Interval = z
  .string()
  .regex(/^[1-9][0-9]{0,6}[smh]$/, 'must be a whole number of seconds, minutes or hours: 30s, 5m, 2h');

/** The seconds an Interval stands for. */
export function intervalSeconds(interval: string): number {
  const amount = Number(interval.slice(0, -1));
  return amount * { s: 1, m: 60, h: 3_600 }[interval.at(-1) as 's' | 'm' | 'h'];
}

/** When a schedule runs: once at a time, every interval, or on a cron expression in a time zone (default UTC). */
export const ScheduleWhen = z.union([
  z.strictObject({ at: z.iso.datetime({ offset: true }) }),
  z.strictObject({ every: Interval }),
  z.strictObject({
    cron: CronExpression,
    time_zone: z
      .string()
      .max(64)
      .refine(isTimeZone, 'is not a time zone the server knows (an IANA name such as Europe/Paris, or UTC)')
      .optional(),
  }),
]);
export type ScheduleWhen = z.infer<typeof ScheduleWhen>;

/** What a run does: start a new conversation (a template, a first message, run), or send a message to an existing one and run it. */
export const ScheduleAction = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('create_conversation'),
    message: MessageText,
    /** An operator-defined template (GET /v1/server-info lists them); default the deployment's spec. */
    template: SpecName.optional(),
    title: Title.optional(),
    tags: Tags.optional(),
  }),
  z.strictObject({ type: z.literal('send_message'), conversation: ConversationId, text: MessageText }),
]);
export type ScheduleAction = z.infer<typeof ScheduleAction>;

/**
 * A run that came due while nothing could take it (the gateways or nats-server down): `run_once`
 * runs it once when they are back, however many came due meanwhile; `skip` drops it.
 */
export const MISSED_RUN_POLICIES = ['run_once', 'skip'] as const;
export const MissedRunPolicy = z.enum(MISSED_RUN_POLICIES);
export type MissedRunPolicy = z.infer<typeof MissedRunPolicy>;

/** `POST /v1/schedules`. */
export const CreateScheduleBody = z.strictObject({
  when: ScheduleWhen,
  action: ScheduleAction,
  missed_runs: MissedRunPolicy.default('run_once'),
  description: z.string().max(200).optional(),
});
export type CreateScheduleBody = z.input<typeof CreateScheduleBody>;

/** `active` fires; `paused` does not until resumed; `completed`: a one-time schedule that ran. */
export const ScheduleStatus = z.enum(['active', 'paused', 'completed']);
export type ScheduleStatus = z.infer<typeof ScheduleStatus>;

export const ScheduleRunOutcome = z.enum(['succeeded', 'failed', 'skipped']);
export type ScheduleRunOutcome = z.infer<typeof ScheduleRunOutcome>;

/** The last run a gateway took: what it did, or why it did nothing. */
export const ScheduleRun = z.strictObject({
  /** When nats-server produced the run (a caught-up run: when the gateway made it). */
  due_at: Timestamp,
  handled_at: Timestamp,
  outcome: ScheduleRunOutcome,
  /** The conversation created or messaged, when the run got that far. */
  conversation: ConversationId.nullable(),
  /** Why it failed or was skipped: the API's error code and message. */
  error: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
});
export type ScheduleRun = z.infer<typeof ScheduleRun>;

export const Schedule = z.strictObject({
  id: ScheduleId,
  when: ScheduleWhen,
  action: ScheduleAction,
  missed_runs: MissedRunPolicy,
  description: z.string().nullable(),
  status: ScheduleStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  /** The next run as nats-server announced it with the last one (before the first: an `at`'s time, an interval's first run); null when paused or not known yet (a cron before its first run). */
  next_run_at: Timestamp.nullable(),
  /** Runs taken so far (succeeded, failed or skipped). */
  runs: z.number().int().nonnegative(),
  last_run: ScheduleRun.nullable(),
});
export type Schedule = z.infer<typeof Schedule>;

export const ScheduleList = z.strictObject({ schedules: z.array(Schedule) });
export type ScheduleList = z.infer<typeof ScheduleList>;
