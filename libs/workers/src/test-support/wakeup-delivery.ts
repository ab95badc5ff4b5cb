import type { ConversationRef } from '@flotilla/log';
import { condenserWakeupSubject, type CondenserWakeupReason, type Delivery } from '@flotilla/runtime';
import { pino } from 'pino';

/** A condenser wake-up for the conversation, as its queue's consumer delivers it; `garbage`: a body that is not one. */
export function wakeupDelivery(ref: ConversationRef, reason: CondenserWakeupReason | 'garbage'): Delivery {
  const subject = condenserWakeupSubject(ref);
  const body = reason === 'garbage' ? '{"not":"a wake-up"}' : JSON.stringify({ v: 1, reason, at: 1 });
  return {
    ref,
    logger: pino({ level: 'silent' }),
    subject,
    streamSeq: 1,
    message: { subject, seq: 1, data: new TextEncoder().encode(body) },
    likelyTail: true,
    eventTypes: () => [],
    header: () => '',
    eventSpan: () => undefined,
    laterQueued: () => false,
    // nothing is ever queued behind it (the handlers these tests drive never wait for one)
    laterQueuedWithin: async () => false,
    deliveryCount: 1,
    signal: new AbortController().signal,
  };
}
