import {
  intervalSeconds,
  MAX_SCHEDULES_PER_TENANT,
  type MissedRunPolicy,
  type ScheduleAction,
  type ScheduleWhen,
} from '@flotilla/api';
import { Buckets, openBucket, SCHEDULES } from '@flotilla/bus';
import {
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { SchedulesError, SchedulesErrorCode } from './errors.js';
import { encodeRunMessage } from './run-message.js';
import { definitionSubject, ensureSchedulesStream, natsSchedule, runSubject } from './schedule-stream.js';
import { newScheduleId, parseStoredSchedule, scheduleKey, StoredSchedule } from './stored-schedule.js';

/** nats-server's refusals of a definition: a pattern, a time zone, an `@at` it does not take. */
const REFUSED_DEFINITION = new Set([10189, 10223]);
const CAS_ATTEMPTS = 20;
const CONSUMER_NOT_FOUND = 10014;
/** Cron and interval schedules came with nats-server 2.14 (`@at` with 2.12). */
export const MINIMUM_SCHEDULES_VERSION = '2.14.0';

/** True for a nats-server version (`2.15.1`, `2.14.0-RC.1`) at or past MINIMUM_SCHEDULES_VERSION. */
export function schedulesSupported(version: string): boolean {
  const [major, minor] = version.split(/[.-]/).map(Number);
  if (major === undefined || minor === undefined || Number.isNaN(major) || Number.isNaN(minor)) return false;
  return major > 2 || (major === 2 && minor >= 14);
}

export type ScheduleStoreOptions = {
  readonly replicas?: number;
  /** Told of a stored value that does not parse (it is left out). */
  readonly onCorrupt?: (key: string) => void;
};

export type NewSchedule = {
  readonly when: ScheduleWhen;
  readonly action: ScheduleAction;
  readonly missed_runs: MissedRunPolicy;
  readonly description?: string | undefined;
};

/** A record read with its bucket revision (for a compare-and-set update). */
export type ScheduleEntry = { readonly schedule: StoredSchedule; readonly revision: number };

/**
 * The tenants' schedules: a record in the schedules bucket (the source of truth) and, while the
 * schedule is active, its definition in the schedules stream (what nats-server fires). The record
 * is written first and the definition after it, so a run never precedes its record; whatever a
 * crash half-way leaves is put right later (`reconcile`, and a run of a schedule that is gone or
 * paused cancels its definition). Every call is confined to one tenant's keys and subjects.
 */
export class ScheduleStore {
  private constructor(
    readonly kv: KV,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly onCorrupt: (key: string) => void,
  ) {}

  /**
   * Creates the stream and the bucket when missing, or opens them. A SchedulesError
   * ('store_unavailable') on a nats-server without cron and interval schedules (before 2.14: an
   * older one would keep a definition as a plain message and never fire it).
   */
  static async open(nc: NatsConnection, options: ScheduleStoreOptions = {}): Promise<ScheduleStore> {
    const replicas = options.replicas ?? 1;
    const version = nc.info?.version ?? 'unknown';
    if (!schedulesSupported(version)) {
      throw new SchedulesError(
        SchedulesErrorCode.StoreUnavailable,
        `nats-server ${version} does not run cron and interval schedules: schedules need ${MINIMUM_SCHEDULES_VERSION} or newer`,
      );
    }
    try {
      const jsm = await jetstreamManager(nc);
      await ensureSchedulesStream(jsm, { replicas });
      if ((await jsm.streams.info(SCHEDULES.stream)).config.allow_msg_schedules !== true) {
        throw new Error(
          `the stream ${SCHEDULES.stream} exists without allow_msg_schedules: an operator enables it on the stream (with the admin credential)`,
        );
      }
      const kv = await openBucket(nc, Buckets.schedules, {
        history: 1,
        replicas,
        allow_direct: false,
        description: "Flotilla schedules: what each tenant's schedule does and when, and its last run",
      });
      return new ScheduleStore(kv, jetstream(nc), jsm, options.onCorrupt ?? (() => undefined));
    } catch (error) {
      throw new SchedulesError(
        SchedulesErrorCode.StoreUnavailable,
        `the schedules stream or bucket could not be opened: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Records a schedule and publishes its definition; a definition nats-server refuses removes the record again (SchedulesError 'refused'). */
  async create(tenant: string, input: NewSchedule, now: Date = new Date()): Promise<StoredSchedule> {
    if ((await this.#keys(tenant)).length >= MAX_SCHEDULES_PER_TENANT) {
      throw new SchedulesError(
        SchedulesErrorCode.LimitReached,
        `a tenant has at most ${MAX_SCHEDULES_PER_TENANT} schedules: delete one first`,
      );
    }
    const schedule: StoredSchedule = {
      v: 1,
      id: newScheduleId(),
      tenant,
      when: input.when,
      action: input.action,
      missed_runs: input.missed_runs,
      description: input.description ?? null,
      status: 'active',
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      next_run_at: firstRun(input.when, now),
      runs: 0,
      last_run: null,
      generation: 0,
      handled_seq: 0,
      claimed_seq: null,
    };
    const key = scheduleKey(tenant, schedule.id);
    await call(`recording schedule ${key}`, () => this.kv.create(key, JSON.stringify(schedule)));
    try {
      await this.publishDefinition(schedule);
    } catch (error) {
      await this.kv.purge(key).catch(() => undefined);
      throw error;
    }
    return schedule;
  }

  /** The tenant's schedules, oldest first. */
  async list(tenant: string): Promise<StoredSchedule[]> {
    const entries = await Promise.all((await this.#keys(tenant)).map((key) => this.#read(key)));
    return entries
      .filter((entry) => entry !== undefined)
      .map((entry) => entry.schedule)
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1));
  }

  /** Every tenant's schedules (what a gateway puts right at its start). */
  async all(): Promise<StoredSchedule[]> {
    const keys = await call('listing the schedules', async () => {
      const found: string[] = [];
      for await (const key of await this.kv.keys()) found.push(key);
      return found;
    });
    const entries = await Promise.all(keys.map((key) => this.#read(key)));
    return entries.filter((entry) => entry !== undefined).map((entry) => entry.schedule);
  }

  get(tenant: string, id: string): Promise<ScheduleEntry | undefined> {
    return this.#read(scheduleKey(tenant, id));
  }

  /**
   * Changes a schedule with compare-and-set, re-reading and re-deciding after a concurrent change:
   * `change` returns the new record, or undefined to leave it. Returns the record as it stands
   * after (undefined when there is none).
   */
  async update(
    tenant: string,
    id: string,
    change: (schedule: StoredSchedule) => StoredSchedule | undefined,
  ): Promise<StoredSchedule | undefined> {
    const key = scheduleKey(tenant, id);
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt += 1) {
      const entry = await this.#read(key);
      if (!entry) return undefined;
      const next = change(entry.schedule);
      if (!next) return entry.schedule;
      try {
        await this.kv.update(key, JSON.stringify(StoredSchedule.parse(next)), entry.revision);
        return next;
      } catch (error) {
        if (!isWrongRevision(error))
          throw new SchedulesError(
            SchedulesErrorCode.Unavailable,
            `updating schedule ${key} failed: ${(error as Error).message}`,
            { cause: error },
          );
      }
    }
    throw new SchedulesError(
      SchedulesErrorCode.Unavailable,
      `schedule ${key} kept changing under ${CAS_ATTEMPTS} updates: retry`,
    );
  }

  /** Pauses: the record says so (a new generation), then the definition and any run waiting are removed. Undefined when there is no such schedule. */
  async pause(tenant: string, id: string, now: Date = new Date()): Promise<StoredSchedule | undefined> {
    const schedule = await this.update(tenant, id, (current) =>
      current.status === 'active'
        ? {
            ...current,
            status: 'paused',
            generation: current.generation + 1,
            next_run_at: null,
            updated_at: now.toISOString(),
          }
        : undefined,
    );
    if (schedule?.status === 'paused') await this.cancelDefinition(tenant, id);
    return schedule;
  }

  /** Resumes a paused schedule: a new generation, its definition published again. A completed one-time schedule stays completed. */
  async resume(tenant: string, id: string, now: Date = new Date()): Promise<StoredSchedule | undefined> {
    const schedule = await this.update(tenant, id, (current) =>
      current.status === 'paused'
        ? {
            ...current,
            status: 'active',
            generation: current.generation + 1,
            next_run_at: firstRun(current.when, now),
            updated_at: now.toISOString(),
          }
        : undefined,
    );
    if (schedule?.status === 'active') await this.publishDefinition(schedule);
    return schedule;
  }

  /** Deletes the record, then the definition and any run waiting; false when the tenant has no such schedule. */
  async remove(tenant: string, id: string): Promise<boolean> {
    const key = scheduleKey(tenant, id);
    const entry = await this.#read(key);
    if (!entry) return false;
    await call(`removing schedule ${key}`, () => this.kv.purge(key));
    await this.cancelDefinition(tenant, id);
    return true;
  }

  /** Publishes a run now (POST …/run): taken as any other, even when the schedule is paused. */
  async runNow(schedule: StoredSchedule, now: Date = new Date()): Promise<void> {
    const message = encodeRunMessage({
      v: 1,
      tenant: schedule.tenant,
      schedule: schedule.id,
      generation: schedule.generation,
      kind: 'manual',
      due_at: now.toISOString(),
    });
    await call(`running schedule ${schedule.id}`, () =>
      this.js.publish(runSubject(schedule.tenant, schedule.id), message),
    );
  }

  /**
   * Publishes a run that nats-server skipped (it was down when it came due) for a `run_once`
   * schedule: its message id is the run that was due, so gateways that all catch it up store it once.
   */
  async catchUp(schedule: StoredSchedule, dueAt: string): Promise<void> {
    const message = encodeRunMessage({
      v: 1,
      tenant: schedule.tenant,
      schedule: schedule.id,
      generation: schedule.generation,
      kind: 'caught_up',
      due_at: dueAt,
    });
    await call(`catching up schedule ${schedule.id}`, () =>
      this.js.publish(runSubject(schedule.tenant, schedule.id), message, {
        msgID: `${schedule.id}:${schedule.generation}:${dueAt}`,
      }),
    );
  }

  /** (Re)publishes the definition of an active schedule: nats-server's scheduler runs it from now on (replacing any earlier one). */
  async publishDefinition(schedule: StoredSchedule): Promise<void> {
    const body = encodeRunMessage({
      v: 1,
      tenant: schedule.tenant,
      schedule: schedule.id,
      generation: schedule.generation,
      kind: 'scheduled',
    });
    try {
      await this.js.publish(definitionSubject(schedule.tenant, schedule.id), body, {
        schedule: { ...natsSchedule(schedule.when), target: runSubject(schedule.tenant, schedule.id) },
      });
    } catch (error) {
      if (error instanceof JetStreamApiError && REFUSED_DEFINITION.has(error.code)) {
        throw new SchedulesError(SchedulesErrorCode.Refused, `nats-server refused the schedule: ${error.message}`, {
          cause: error,
        });
      }
      throw new SchedulesError(
        SchedulesErrorCode.Unavailable,
        `publishing the definition of schedule ${schedule.id} failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  /** Cancels the schedule on nats-server (its definition purged) and drops a run still waiting. */
  async cancelDefinition(tenant: string, id: string): Promise<void> {
    for (const filter of [definitionSubject(tenant, id), runSubject(tenant, id)]) {
      await call(`cancelling schedule ${id}`, () => this.jsm.streams.purge(SCHEDULES.stream, { filter }));
    }
  }

  /** True when the stream holds the schedule's definition (nats-server will run it). */
  async hasDefinition(tenant: string, id: string): Promise<boolean> {
    return (await this.#lastSeq(definitionSubject(tenant, id))) !== undefined;
  }

  /** The stream sequence of the last run on the schedule's subject (taken or not), if any. */
  lastRunSeq(tenant: string, id: string): Promise<number | undefined> {
    return this.#lastSeq(runSubject(tenant, id));
  }

  /** The gateways' consumer's ack floor: every run at or below it was taken (0 before the consumer exists). */
  async takenFloor(): Promise<number> {
    try {
      return (await this.jsm.consumers.info(SCHEDULES.stream, SCHEDULES.group)).ack_floor.stream_seq;
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) return 0;
      throw new SchedulesError(
        SchedulesErrorCode.Unavailable,
        `reading the schedules' consumer failed: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  async #lastSeq(subject: string): Promise<number | undefined> {
    const message = await call(`reading ${subject}`, () =>
      this.jsm.streams.getMessage(SCHEDULES.stream, { last_by_subj: subject }),
    );
    return message?.seq;
  }

  async #read(key: string): Promise<ScheduleEntry | undefined> {
    const entry = await call(`reading schedule ${key}`, () => this.kv.get(key));
    if (!entry || entry.operation !== 'PUT') return undefined;
    const schedule = parseStoredSchedule(key, entry.value);
    if (!schedule) {
      this.onCorrupt(key);
      return undefined;
    }
    return { schedule, revision: entry.revision };
  }

  #keys(tenant: string): Promise<string[]> {
    return call(`listing the schedules of ${tenant}`, async () => {
      const keys: string[] = [];
      for await (const key of await this.kv.keys(`${tenant}.*`)) keys.push(key);
      return keys;
    });
  }
}

/** When a schedule made or resumed now runs first, as far as is known before the server says: an `at`'s time, an interval from now; null for a cron. */
function firstRun(when: ScheduleWhen, now: Date): string | null {
  if ('at' in when) return new Date(when.at).toISOString();
  if ('every' in when) return new Date(now.getTime() + intervalSeconds(when.every) * 1000).toISOString();
  return null;
}

/** Runs one bucket or stream operation, turning NATS failures into SchedulesErrors. */
async function call<T>(what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof SchedulesError) throw error;
    const code =
      error instanceof JetStreamApiError ? SchedulesErrorCode.StoreUnavailable : SchedulesErrorCode.Unavailable;
    throw new SchedulesError(code, `${what} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** A compare-and-set that lost to a concurrent write. */
function isWrongRevision(error: unknown): boolean {
  return error instanceof Error && /wrong last sequence/i.test(error.message);
}
