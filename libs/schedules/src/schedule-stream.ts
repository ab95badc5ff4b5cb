import { intervalSeconds, type ScheduleWhen } from '@flotilla/api';
import { ensureStream, SCHEDULES } from '@flotilla/bus';
import { StorageType, type JetStreamManager, type ScheduleSpec } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

/** The subject of a schedule's definition: its identity on nats-server's scheduler. */
export function definitionSubject(tenant: string, id: string): string {
  return `${SCHEDULES.definitionPrefix}.${tenant}.${id}`;
}

/** The subject nats-server publishes a schedule's runs on. */
export function runSubject(tenant: string, id: string): string {
  return `${SCHEDULES.firePrefix}.${tenant}.${id}`;
}

export type SchedulesStreamSettings = {
  readonly replicas: number;
  /** A run published again within this window with the same message id (a caught-up run two gateways made) is stored once. */
  readonly duplicateWindowMs?: number;
};

/**
 * The schedules' stream: definitions and runs, one message kept per subject (a definition is
 * replaced by its next version; runs that wait for a gateway collapse into the latest, which is
 * how `missed_runs: run_once` runs once however many came due), file storage, message schedules
 * allowed (nats-server 2.14+: cron and intervals). Created when missing; an existing one is left
 * as it is.
 */
export async function ensureSchedulesStream(jsm: JetStreamManager, settings: SchedulesStreamSettings): Promise<void> {
  await ensureStream(jsm, {
    name: SCHEDULES.stream,
    description: "Flotilla schedules: each schedule's definition (nats-server's scheduler) and its runs",
    subjects: [`${SCHEDULES.definitionPrefix}.*.*`, `${SCHEDULES.firePrefix}.*.*`],
    storage: StorageType.File,
    num_replicas: settings.replicas,
    max_msgs_per_subject: 1,
    duplicate_window: nanos(settings.duplicateWindowMs ?? 120_000),
    allow_msg_schedules: true,
  });
}

/** What nats-server's scheduler is told for a schedule's `when`: the specification and, for a cron, the time zone. */
export function natsSchedule(when: ScheduleWhen): { specification: ScheduleSpec; timezone?: string } {
  if ('at' in when) return { specification: { at: new Date(when.at) } };
  if ('every' in when) return { specification: { every: `${intervalSeconds(when.every)}s` } };
  const predefined = when.cron.startsWith('@');
  // nats-server takes a time zone with cron and predefined schedules only; UTC is its default
  const zone = when.time_zone !== undefined ? { timezone: when.time_zone } : {};
  return predefined
    ? { specification: { predefined: when.cron as never }, ...zone }
    : { specification: { cron: when.cron }, ...zone };
}
