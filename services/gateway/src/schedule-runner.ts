import type { ScheduleRun } from '@flotilla/api';
import {
  claimRun,
  decideRun,
  recordRun,
  RunConsumer,
  runConversationId,
  type DeliveredRun,
  type ScheduleStore,
  type StoredSchedule,
} from '@flotilla/schedules';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';
import type { ConversationService } from './conversation-service.js';

type Outcome = Omit<ScheduleRun, 'due_at' | 'handled_at'>;

const RECONCILE_ATTEMPTS = 10;
const RECONCILE_RETRY_MS = 1_000;

/**
 * Takes the schedules' runs (one durable consumer shared by every gateway: each run reaches one)
 * and does what each says through the conversations service, as the tenant's own request would:
 * a conversation created from a template with a message and run, or a message sent to one and
 * run. Each run is taken once: a created conversation's id is derived from the run (a run taken
 * again finds it), and a message's run is claimed on the schedule before it is sent (a run taken
 * again after its gateway died mid-way is recorded as interrupted, not sent twice). An action
 * that fails (no conversation, capacity, a spec refused) is recorded on the schedule, not retried.
 *
 * At its start and after every reconnection to NATS it also puts right what the server or a crash
 * left: an active schedule without its definition gets it back, and a `run_once` schedule whose
 * announced next run passed while nats-server was down (its scheduler skips those) is run once.
 */
export class ScheduleRunner {
  #consumer: RunConsumer | undefined;
  #stopped = false;

  constructor(
    readonly store: ScheduleStore,
    readonly conversations: ConversationService,
    readonly logger: Logger,
    /** How late a run may be taken before `missed_runs: skip` skips it. */
    readonly graceMs: number,
    /** Told the outcome of each run taken (`dropped`: a run of a schedule gone, paused, stale or taken already). */
    readonly observe: (outcome: 'succeeded' | 'failed' | 'skipped' | 'dropped') => void = () => undefined,
  ) {}

  async start(nc: NatsConnection): Promise<void> {
    this.#consumer = await RunConsumer.start(nc, this.store.jsm, (run) => this.take(run), {
      onMalformed: (subject, seq) =>
        this.logger.error({ subject, seq }, 'a message on a schedule run subject is not a run: dropped'),
      onError: (error) => this.logger.warn({ err: error }, 'taking a schedule run failed'),
    });
    await this.#reconcileUntilDone();
    void (async () => {
      for await (const status of nc.status()) {
        if (this.#stopped) break;
        if (status.type === 'reconnect') await this.#reconcileUntilDone();
      }
    })();
  }

  /** Reconciles, retrying while JetStream is not back yet (a restarted nats-server takes a moment to restore its streams). */
  async #reconcileUntilDone(): Promise<void> {
    for (let attempt = 1; !this.#stopped; attempt += 1) {
      try {
        await this.reconcile();
        return;
      } catch (error) {
        if (attempt >= RECONCILE_ATTEMPTS) {
          this.logger.warn({ err: error }, 'putting the schedules right failed: tried again at the next reconnection');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, RECONCILE_RETRY_MS));
      }
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#consumer?.stop();
  }

  /** One run: decided from the schedule's record, acted on, its outcome recorded. */
  async take(run: DeliveredRun): Promise<void> {
    const { tenant, schedule: id } = run.message;
    const log = this.logger.child({ tenant, schedule: id, seq: run.seq, kind: run.message.kind });
    const decision = decideRun((await this.store.get(tenant, id))?.schedule, run, new Date(), this.graceMs);
    switch (decision.kind) {
      case 'drop':
        log.debug({ reason: decision.reason }, 'schedule run dropped');
        this.observe('dropped');
        // a definition that outlived its schedule or its pause (a crash between the two writes): cancelled now
        if ((decision.reason === 'no_schedule' || decision.reason === 'paused') && run.message.kind === 'scheduled')
          await this.store.cancelDefinition(tenant, id);
        return;
      case 'skip':
        log.info({ reason: decision.reason }, 'schedule run skipped');
        await this.#record(run, {
          outcome: 'skipped',
          conversation: null,
          error: { code: 'missed_run_skipped', message: decision.reason },
        });
        this.observe('skipped');
        return;
      case 'interrupted':
        log.warn('schedule run interrupted: its message is not sent again');
        await this.#record(run, {
          outcome: 'failed',
          conversation: null,
          error: {
            code: 'interrupted',
            message:
              'the gateway taking this run stopped while sending its message; it is not sent again (read the conversation to see whether it arrived)',
          },
        });
        this.observe('failed');
        return;
      case 'act': {
        const claimed = await this.store.update(tenant, id, (current) =>
          current.handled_seq >= run.seq || current.claimed_seq === run.seq
            ? undefined
            : claimRun(current, run.seq, new Date()),
        );
        if (!claimed || claimed.handled_seq >= run.seq) return;
        const outcome = await this.#act(claimed, run.seq);
        log.info(
          { outcome: outcome.outcome, conversation: outcome.conversation, error: outcome.error?.code },
          'schedule run taken',
        );
        await this.#record(run, outcome);
        this.observe(outcome.outcome);
      }
    }
  }

  /** Active schedules without their definition get it back; `run_once` schedules whose next run passed unseen are run once. */
  async reconcile(now: Date = new Date()): Promise<void> {
    const taken = await this.store.takenFloor();
    for (const schedule of await this.store.all()) {
      if (schedule.status !== 'active') continue;
      const waiting =
        ((await this.store.lastRunSeq(schedule.tenant, schedule.id)) ?? 0) > Math.max(schedule.handled_seq, taken);
      if (waiting) continue; // a run is in the stream: it is taken as it comes
      if (!(await this.store.hasDefinition(schedule.tenant, schedule.id))) {
        this.logger.warn(
          { tenant: schedule.tenant, schedule: schedule.id },
          'an active schedule had no definition (a crash as it was written): published again',
        );
        await this.store.publishDefinition(schedule);
      }
      if (isOverdue(schedule, now, this.graceMs) && schedule.missed_runs === 'run_once') {
        this.logger.info(
          { tenant: schedule.tenant, schedule: schedule.id, due: schedule.next_run_at },
          'a run came due while nats-server was down: run once',
        );
        await this.store.catchUp(schedule, schedule.next_run_at!);
      }
    }
  }

  async #act(schedule: StoredSchedule, seq: number): Promise<Outcome> {
    const { action, tenant } = schedule;
    try {
      if (action.type === 'create_conversation') {
        const { conversation } = await this.conversations.create(tenant, {
          id: runConversationId(schedule, seq),
          message: action.message,
          run: true,
          ...(action.template !== undefined ? { template: action.template } : {}),
          ...(action.title !== undefined ? { title: action.title } : {}),
          ...(action.tags !== undefined ? { tags: action.tags } : {}),
        });
        return { outcome: 'succeeded', conversation: conversation.id, error: null };
      }
      await this.conversations.sendMessage({ tenant, conversation: action.conversation }, { text: action.text }, true);
      return { outcome: 'succeeded', conversation: action.conversation, error: null };
    } catch (error) {
      const conversation = action.type === 'send_message' ? action.conversation : null;
      if (error instanceof ApiError)
        return { outcome: 'failed', conversation, error: { code: error.code, message: error.message } };
      this.logger.error({ err: error, tenant, schedule: schedule.id }, 'a schedule run failed unexpectedly');
      return { outcome: 'failed', conversation, error: { code: 'internal', message: (error as Error).message } };
    }
  }

  async #record(run: DeliveredRun, outcome: Outcome): Promise<void> {
    await this.store.update(run.message.tenant, run.message.schedule, (current) =>
      current.handled_seq >= run.seq ? undefined : recordRun(current, run, outcome, new Date()),
    );
  }
}

/** A recurring schedule whose announced next run is past by more than the grace: nats-server did not run it (it was down). */
function isOverdue(schedule: StoredSchedule, now: Date, graceMs: number): boolean {
  if ('at' in schedule.when || schedule.next_run_at === null) return false;
  return Date.parse(schedule.next_run_at) < now.getTime() - graceMs;
}
