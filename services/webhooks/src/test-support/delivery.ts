import { CommitHeader } from '@flotilla/events';
import { parseConversationSubject, type RawMessage } from '@flotilla/log';
import type { Delivery } from '@flotilla/runtime';
import type { JetStreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';

/** A stored message of a stream (a commit, a queued delivery) as the runtime's consumer hands it to a handler. */
export async function deliveryOf(
  jsm: JetStreamManager,
  stream: string,
  subjectPrefix: string,
  seq: number,
  deliveryCount = 1,
): Promise<Delivery> {
  const stored = await jsm.streams.getMessage(stream, { seq });
  if (!stored) throw new Error(`no message ${seq} in ${stream}`);
  const message: RawMessage = { subject: stored.subject, seq: stored.seq, data: stored.data, headers: stored.header };
  return {
    ref: parseConversationSubject(subjectPrefix, stored.subject),
    subject: stored.subject,
    streamSeq: stored.seq,
    message,
    likelyTail: false,
    eventTypes: () => (stored.header?.get(CommitHeader.EventTypes) ?? '').split(',').filter(Boolean),
    header: (name) => stored.header?.get(name) ?? '',
    eventSpan: () => undefined,
    laterQueued: () => false,
    // nothing is ever queued behind it (the handlers these tests drive never wait for one)
    laterQueuedWithin: async () => false,
    deliveryCount,
    signal: new AbortController().signal,
    logger: pino({ level: process.env['FLOTILLA_TEST_LOGS'] ? 'info' : 'silent' }),
  };
}
