import { eventTypesOf, type ConversationRef, type EventLog } from '@flotilla/log';
import type { Delivery } from '@flotilla/runtime';
import { pino } from 'pino';

export type StoredDeliveryOptions = {
  /** Default: no later commit of the conversation waits behind this one. */
  readonly laterQueued?: () => boolean;
  /** Default: the commit's own Flotilla-Event-Types header. */
  readonly eventTypes?: readonly string[];
  readonly signal?: AbortSignal;
  /** Whether the server had nothing pending for the group behind it (default: no later commit queued here). */
  readonly likelyTail?: boolean;
};

/** The commit stored at `seq`, delivered as the group's consumer delivers it (first delivery). */
export async function storedDelivery(
  log: EventLog,
  ref: ConversationRef,
  seq: number,
  options: StoredDeliveryOptions = {},
): Promise<Delivery> {
  const stored = await log.jsm.direct.getMessage(log.streamName, { seq });
  if (!stored) throw new Error(`no message ${seq}`);
  const laterQueued = options.laterQueued ?? (() => false);
  const signal = options.signal ?? new AbortController().signal;
  const eventTypes = options.eventTypes ?? eventTypesOf({ headers: stored.header });
  return {
    ref,
    logger: pino({ level: 'silent' }),
    subject: stored.subject,
    streamSeq: seq,
    message: { subject: stored.subject, seq, data: stored.data },
    likelyTail: options.likelyTail ?? !laterQueued(),
    eventTypes: () => [...eventTypes],
    header: (name) => stored.header?.get(name) ?? '',
    eventSpan: () => undefined,
    laterQueued,
    laterQueuedWithin: (ms) => becomesTrue(laterQueued, ms, signal),
    deliveryCount: 1,
    signal,
  };
}

/** Resolves true once `check` does (looked at every millisecond), false after `ms` or when the signal aborts. */
async function becomesTrue(check: () => boolean, ms: number, signal: AbortSignal): Promise<boolean> {
  const until = performance.now() + ms;
  while (!check()) {
    if (signal.aborted || performance.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return true;
}
