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
    deliveryCount: 1,
    signal: options.signal ?? new AbortController().signal,
  };
}
