import { DELETIONS, ensureWorkQueue } from '@flotilla/bus';
import { assertConversationRef, type ConversationRef } from '@flotilla/log';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { z } from 'zod';

/**
 * A conversation deleted everywhere the services keep it: its log up to `up_to_stream_seq` (the
 * events stream's last sequence once the log was purged: every commit of the deleted conversation
 * is at or below it, a conversation created again under the same id is above it). Published by the
 * gateway on `DELETIONS.subjectPrefix.<tenant>.<conversation>`, read by the PostgreSQL sink.
 */
export const DeletionNotice = z.strictObject({
  tenant: z.string(),
  conversation: z.string(),
  up_to_stream_seq: z.number().int().nonnegative(),
  /** A user's DELETE (or its parent's), or its retention. */
  reason: z.enum(['deleted', 'expired']),
  at: z.iso.datetime(),
});
export type DeletionNotice = z.infer<typeof DeletionNotice>;

const DUPLICATE_WINDOW_MS = 10 * 60 * 1_000;

/** The notices' queue: created when missing by whoever publishes or reads first. */
export async function ensureDeletionNotices(jsm: JetStreamManager, replicas: number): Promise<void> {
  await ensureWorkQueue(jsm, {
    stream: DELETIONS.stream,
    description: 'Flotilla: conversations deleted, for the PostgreSQL sink',
    subjects: [`${DELETIONS.subjectPrefix}.*.*`],
    replicas,
    duplicateWindowMs: DUPLICATE_WINDOW_MS,
    maxAgeMs: DELETIONS.maxAgeDays * 24 * 3_600_000,
  });
}

/** Stores the notice (resolves once JetStream has it; the same deletion published again is stored once). */
export async function publishDeletion(js: JetStreamClient, notice: DeletionNotice): Promise<void> {
  const ref: ConversationRef = { tenant: notice.tenant, conversation: notice.conversation };
  assertConversationRef(ref);
  await js.publish(
    `${DELETIONS.subjectPrefix}.${ref.tenant}.${ref.conversation}`,
    JSON.stringify(DeletionNotice.parse(notice)),
    { msgID: `${ref.tenant}.${ref.conversation}.${notice.up_to_stream_seq}` },
  );
}
