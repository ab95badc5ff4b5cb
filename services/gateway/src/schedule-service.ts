import {
  intervalSeconds,
  PREDEFINED_SCHEDULES,
  type CreateScheduleBody,
  type Schedule,
  type ScheduleWhen,
} from '@flotilla/api';
import type { AgentCatalog } from '@flotilla/agent';
import { publicSchedule, SchedulesError, type ScheduleStore } from '@flotilla/schedules';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';
import type { ConversationService } from './conversation-service.js';

export type ScheduleLimits = {
  /** The shortest interval a schedule may run at (`every`, and how often a cron may fire). */
  readonly minIntervalSeconds: number;
};

/**
 * Schedules as the gateway serves them, each confined to the caller's tenant: checked (the
 * operator's shortest interval, a time in the future, a template the catalog has, a conversation
 * of the tenant's), stored and given to nats-server's scheduler. Without the schedules store
 * (a nats-server older than 2.14) every call answers 503.
 */
export class ScheduleService {
  constructor(
    readonly store: ScheduleStore | undefined,
    readonly conversations: ConversationService,
    readonly catalog: AgentCatalog,
    readonly limits: ScheduleLimits,
    readonly logger: Logger,
  ) {}

  async create(tenant: string, body: CreateScheduleBody): Promise<Schedule> {
    const store = this.#require();
    const input = { ...body, missed_runs: body.missed_runs ?? 'run_once' };
    this.#checkWhen(input.when);
    if (
      input.action.type === 'create_conversation' &&
      input.action.template !== undefined &&
      !this.catalog.template(input.action.template)
    ) {
      const names = this.catalog.templateNames().join(', ') || 'none';
      throw invalid('body.action.template', `no template "${input.action.template}" (the templates: ${names})`);
    }
    // a message to a conversation of another tenant, or none: as if it did not exist
    if (input.action.type === 'send_message')
      await this.conversations.snapshot({ tenant, conversation: input.action.conversation });
    const schedule = await this.#guard(() => store.create(tenant, input));
    this.logger.info(
      { tenant, schedule: schedule.id, when: schedule.when, action: schedule.action.type },
      'schedule created',
    );
    return publicSchedule(schedule);
  }

  async list(tenant: string): Promise<Schedule[]> {
    const store = this.#require();
    return (await this.#guard(() => store.list(tenant))).map(publicSchedule);
  }

  async get(tenant: string, id: string): Promise<Schedule> {
    const store = this.#require();
    const entry = await this.#guard(() => store.get(tenant, id));
    if (!entry) throw scheduleNotFound(id);
    return publicSchedule(entry.schedule);
  }

  /** Stops its runs until resumed (a run waiting for a gateway is dropped); pausing a paused or completed schedule changes nothing. */
  async pause(tenant: string, id: string): Promise<Schedule> {
    const store = this.#require();
    const schedule = await this.#guard(() => store.pause(tenant, id));
    if (!schedule) throw scheduleNotFound(id);
    this.logger.info({ tenant, schedule: id, status: schedule.status }, 'schedule paused');
    return publicSchedule(schedule);
  }

  /** Runs it again from now on (a one-time schedule whose time passed runs at once); resuming an active or completed one changes nothing. */
  async resume(tenant: string, id: string): Promise<Schedule> {
    const store = this.#require();
    const schedule = await this.#guard(() => store.resume(tenant, id));
    if (!schedule) throw scheduleNotFound(id);
    this.logger.info({ tenant, schedule: id, status: schedule.status }, 'schedule resumed');
    return publicSchedule(schedule);
  }

  async remove(tenant: string, id: string): Promise<void> {
    const store = this.#require();
    if (!(await this.#guard(() => store.remove(tenant, id)))) throw scheduleNotFound(id);
    this.logger.info({ tenant, schedule: id }, 'schedule deleted');
  }

  /** Makes a run now, taken by a gateway as any other (also for a paused or completed schedule). */
  async runNow(tenant: string, id: string): Promise<Schedule> {
    const store = this.#require();
    const entry = await this.#guard(() => store.get(tenant, id));
    if (!entry) throw scheduleNotFound(id);
    await this.#guard(() => store.runNow(entry.schedule));
    return publicSchedule(entry.schedule);
  }

  #checkWhen(when: ScheduleWhen): void {
    const minimum = this.limits.minIntervalSeconds;
    if ('at' in when && Date.parse(when.at) <= Date.now()) throw invalid('body.when.at', 'must be in the future');
    if ('every' in when && intervalSeconds(when.every) < minimum)
      throw invalid(
        'body.when.every',
        `must be at least ${minimum} s (the operator's FLOTILLA_SCHEDULE_MIN_INTERVAL_SECONDS)`,
      );
    if ('cron' in when && !(PREDEFINED_SCHEDULES as readonly string[]).includes(when.cron) && minimum >= 60) {
      // a cron fires at most once a minute when its seconds field is one second
      if (!/^[0-9]+$/.test(when.cron.split(' ')[0] ?? ''))
        throw invalid(
          'body.when.cron',
          `its seconds field must be one second (e.g. "0 …"): schedules here run at most every ${minimum} s`,
        );
    }
  }

  #require(): ScheduleStore {
    if (this.store) return this.store;
    throw new ApiError(
      503,
      'unavailable',
      'Schedules are not available on this gateway: they need nats-server 2.14 or newer (message schedules).',
    );
  }

  async #guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof SchedulesError)) throw error;
      if (error.code === 'limit_reached') throw new ApiError(409, 'schedule_limit_reached', `${error.message}.`);
      if (error.code === 'refused') throw invalid('body.when', error.message);
      this.logger.warn({ err: error }, 'the schedules stream or bucket is unavailable');
      throw new ApiError(503, 'unavailable', 'The schedules are not reachable right now; retry.', undefined, 1);
    }
  }
}

function invalid(path: string, message: string): ApiError {
  return new ApiError(400, 'validation_failed', `${path}: ${message}`, [{ path, message }]);
}

function scheduleNotFound(id: string): ApiError {
  return new ApiError(404, 'schedule_not_found', `No schedule "${id}".`);
}
