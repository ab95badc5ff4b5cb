import { SCHEDULES } from '@flotilla/bus';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { DeliveredRun } from './run-decision.js';
import { parseRunMessage } from './run-message.js';
import { runSubject } from './schedule-stream.js';

const RETRY_DELAY_MS = 2_000;

export type RunConsumerOptions = {
  /** How long a run may be in a gateway's hands before it is delivered again (to another gateway). */
  readonly ackWaitMs?: number;
  /** Deliveries of one run before it is given up (a run that keeps killing its gateway). */
  readonly maxDeliver?: number;
  /** Told of a message on a run subject that is not a run (it is dropped). */
  readonly onMalformed?: (subject: string, seq: number) => void;
  readonly onError?: (error: unknown) => void;
};

/**
 * The gateways' one durable consumer of the schedules' runs: each run reaches one gateway, and
 * another when that one dies before acknowledging it. `take` is called with each run; the run is
 * acknowledged when it returns. When it throws (the bucket unreachable for a moment) the run is
 * delivered again a little later, at most `maxDeliver` times in all: `take` decides from the
 * schedule's record, so a run taken again is never acted on twice.
 */
export class RunConsumer {
  #messages: ConsumerMessages | undefined;
  #stopped = false;
  #loop: Promise<void> | undefined;

  private constructor(
    readonly nc: NatsConnection,
    readonly options: RunConsumerOptions,
  ) {}

  static async start(
    nc: NatsConnection,
    jsm: JetStreamManager,
    take: (run: DeliveredRun) => Promise<void>,
    options: RunConsumerOptions = {},
  ): Promise<RunConsumer> {
    const config = {
      durable_name: SCHEDULES.group,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${SCHEDULES.firePrefix}.>`,
      ack_wait: nanos(options.ackWaitMs ?? 60_000),
      max_deliver: options.maxDeliver ?? 5,
    };
    // every gateway makes it the same; one made by another gateway meanwhile is the same one
    await jsm.consumers.add(SCHEDULES.stream, config).catch(async (error: unknown) => {
      if (
        !(await jsm.consumers.info(SCHEDULES.stream, SCHEDULES.group).then(
          () => true,
          () => false,
        ))
      )
        throw error;
    });
    const consumer = new RunConsumer(nc, options);
    consumer.#loop = consumer.#run(take);
    return consumer;
  }

  async #run(take: (run: DeliveredRun) => Promise<void>): Promise<void> {
    while (!this.#stopped) {
      try {
        const consumer = await jetstream(this.nc).consumers.get(SCHEDULES.stream, SCHEDULES.group);
        this.#messages = await consumer.consume({ max_messages: 8 });
        if (this.#stopped) this.#messages.stop();
        for await (const message of this.#messages) await this.#handle(message, take);
      } catch (error) {
        if (!this.#stopped) this.options.onError?.(error);
      }
      if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }

  async #handle(message: JsMsg, take: (run: DeliveredRun) => Promise<void>): Promise<void> {
    const parsed = parseRunMessage(message.data);
    // a run names the schedule of its own subject (a body copied onto another tenant's subject is not a run of it)
    if (!parsed || message.subject !== runSubject(parsed.tenant, parsed.schedule)) {
      this.options.onMalformed?.(message.subject, message.seq);
      message.term();
      return;
    }
    // a working() keeps the run in this gateway's hands while its action takes long
    const keepAlive = setInterval(() => message.working(), Math.max(1_000, (this.options.ackWaitMs ?? 60_000) / 3));
    try {
      const storedAt = new Date(Math.floor(message.info.timestampNanos / 1e6));
      await take({
        seq: message.seq,
        message: parsed,
        dueAt: parsed.due_at !== undefined ? new Date(parsed.due_at) : storedAt,
        next: message.headers?.get('Nats-Schedule-Next') || undefined,
      });
    } catch (error) {
      this.options.onError?.(error);
      clearInterval(keepAlive);
      message.nak(RETRY_DELAY_MS);
      return;
    }
    clearInterval(keepAlive);
    message.ack();
  }

  /** Stops taking runs (a run in hand is finished first). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#messages?.stop();
    await this.#loop;
  }
}
