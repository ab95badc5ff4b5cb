import { CONDENSER_WAKEUPS, ensureWorkQueue, parseQueueMessage } from '@flotilla/bus';
import type { ConversationRef } from '@flotilla/log';
import { TRACEPARENT_HEADER } from '@flotilla/tracing';
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { z } from 'zod';
import type { ServiceQueue } from './run-service.js';

/** Why a conversation's condenser was woken: it waits for a condensation, or is owed a title. */
export const CondenserWakeupReason = { Condense: 'condense', Title: 'title' } as const;
export type CondenserWakeupReason = (typeof CondenserWakeupReason)[keyof typeof CondenserWakeupReason];

/**
 * A wake-up's body: why, and where it was decided (`at`: the conversation's last stream sequence
 * then). The condenser decides from the log at the conversation's tail whatever the body says;
 * the reason says which duty to look at.
 */
export const CondenserWakeup = z.strictObject({
  v: z.literal(1),
  reason: z.enum([CondenserWakeupReason.Condense, CondenserWakeupReason.Title]),
  at: z.number().int().nonnegative(),
});
export type CondenserWakeup = z.infer<typeof CondenserWakeup>;

/** A wake-up read back: its body, or why it is not one. */
export function parseCondenserWakeup(
  data: Uint8Array,
): { ok: true; wakeup: CondenserWakeup } | { ok: false; reason: string } {
  const parsed = parseQueueMessage(CondenserWakeup, data);
  return parsed.ok ? { ok: true, wakeup: parsed.value } : parsed;
}

/** The queue's subject of a conversation's wake-ups. */
export function condenserWakeupSubject(ref: ConversationRef): string {
  return `${CONDENSER_WAKEUPS.subjectPrefix}.${ref.tenant}.${ref.conversation}`;
}

/** A wake-up published again within this window (its commit decided twice) is stored once. */
const DUPLICATE_WINDOW_MS = 120_000;

/** The condenser's queue of wake-ups (CONDENSER_WAKEUPS), created when missing, by its publishers and by the condenser. */
export async function ensureCondenserWakeups(jsm: JetStreamManager, replicas: number): Promise<void> {
  await ensureWorkQueue(jsm, {
    stream: CONDENSER_WAKEUPS.stream,
    description: 'Flotilla condenser wake-ups: conversations waiting for a condensation or owed a title',
    subjects: [`${CONDENSER_WAKEUPS.subjectPrefix}.*.*`],
    replicas,
    duplicateWindowMs: DUPLICATE_WINDOW_MS,
  });
}

/** The condenser service's queue (runService's `queue`): its group pulls these wake-ups, not the log's commits. */
export const CONDENSER_QUEUE: ServiceQueue = {
  stream: CONDENSER_WAKEUPS.stream,
  subjectPrefix: CONDENSER_WAKEUPS.subjectPrefix,
  ensure: (jsm, config) => ensureCondenserWakeups(jsm, config.storage.replicas),
};

export type WakeOptions = {
  /** The trace of the commit this was decided at, which the condenser's work continues. */
  readonly traceparent?: string;
  /**
   * A second wake-up for the same decision (a wait nobody answered): not taken for a duplicate of
   * the first, which the queue's de-duplication would drop if it was handled within its window.
   */
  readonly again?: boolean;
};

/**
 * Wakes a conversation's condenser. Resolves once JetStream stored the wake-up, so that a caller
 * acknowledges the commit it decided this at only afterwards (a lost wake-up would leave a
 * conversation waiting for a condensation nobody makes). Its message id is the reason, the
 * conversation and `at`: the same decision made twice (its commit redelivered, or decided by two
 * instances) is stored once (within the queue's 2-minute de-duplication window).
 */
export class CondenserWakeups {
  /** `ensureQueue` creates the queue when it is missing (ensureCondenserWakeups): a wake-up that finds no stream (an operator removed it) makes it again, once. */
  constructor(
    private readonly js: JetStreamClient,
    private readonly ensureQueue: () => Promise<void>,
  ) {}

  async wake(
    ref: ConversationRef,
    reason: CondenserWakeupReason,
    at: number,
    options: WakeOptions = {},
  ): Promise<void> {
    const body: CondenserWakeup = { v: 1, reason, at };
    const traced = options.traceparent ? headers() : undefined;
    if (traced && options.traceparent) traced.set(TRACEPARENT_HEADER, options.traceparent);
    const publish = () =>
      this.js.publish(condenserWakeupSubject(ref), JSON.stringify(body), {
        msgID: `${reason}.${ref.tenant}.${ref.conversation}.${at}${options.again ? '.again' : ''}`,
        expect: { streamName: CONDENSER_WAKEUPS.stream },
        ...(traced ? { headers: traced } : {}),
      });
    try {
      await publish();
    } catch (error) {
      // the stream may be gone: made again, then the wake-up once more (a second failure is the caller's: its commit is redelivered)
      await this.ensureQueue().catch(() => Promise.reject(error));
      await publish();
    }
  }
}

const CONSUMER_NOT_FOUND = 10014;

/**
 * Removes the durable consumer an older condenser pulled the events stream with (before it was
 * woken through its queue), when it is there: nothing reads it, and the server would keep
 * tracking every commit for it. Takes the admin credential (the launcher). True when one was removed.
 */
export async function removeRetiredCondenserGroup(jsm: JetStreamManager, eventsStream: string): Promise<boolean> {
  const missing = (error: unknown): false => {
    if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) return false;
    throw error;
  };
  // looked up first: a credential that may read but not delete says nothing when there is none
  const present = await jsm.consumers.info(eventsStream, CONDENSER_WAKEUPS.group).then(() => true, missing);
  return present && (await jsm.consumers.delete(eventsStream, CONDENSER_WAKEUPS.group).catch(missing));
}
