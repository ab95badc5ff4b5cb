import { WebhookEvent, WebhookId } from '@flotilla/api';
import { isLostCreationRace, WEBHOOK_DELIVERIES } from '@flotilla/bus';
import { TenantId, Timestamp } from '@flotilla/events';
import { JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { z } from 'zod';
import { callNats } from './bucket-call.js';

/** One delivery to make: an event for one webhook. */
export const DeliveryJob = z.strictObject({
  v: z.literal(1),
  tenant: TenantId,
  webhook: WebhookId,
  enqueued_at: Timestamp,
  event: WebhookEvent,
});
export type DeliveryJob = z.infer<typeof DeliveryJob>;

/** The queue's subject of a webhook's deliveries. */
export function deliverySubject(tenant: string, webhook: string): string {
  return `${WEBHOOK_DELIVERIES.subjectPrefix}.${tenant}.${webhook}`;
}

/** A delivery read back from the queue: the job, or why it is not one. */
export function parseDeliveryJob(data: Uint8Array): { ok: true; job: DeliveryJob } | { ok: false; reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return { ok: false, reason: 'not JSON' };
  }
  const parsed = DeliveryJob.safeParse(json);
  if (!parsed.success) return { ok: false, reason: parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).slice(0, 3).join('; ') };
  return { ok: true, job: parsed.data };
}

const STREAM_NOT_FOUND = 10059;

export type DeliveryQueueSettings = {
  readonly replicas: number;
  /** A job published again within this window (a commit handled twice) is stored once. */
  readonly duplicateWindowMs: number;
};

/**
 * The queue of deliveries still to make: a work-queue stream (a delivery leaves it when it is
 * acknowledged: done, or dead-lettered), file storage, one subject per webhook. Created by the
 * webhooks service when missing; an existing one is left as it is.
 */
export async function ensureDeliveryQueue(jsm: JetStreamManager, settings: DeliveryQueueSettings): Promise<void> {
  const exists = await jsm.streams.info(WEBHOOK_DELIVERIES.stream).then(
    () => true,
    (error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return false;
      throw error;
    },
  );
  if (exists) return;
  await jsm.streams
    .add({
      name: WEBHOOK_DELIVERIES.stream,
      description: 'Flotilla webhook deliveries still to make',
      subjects: [`${WEBHOOK_DELIVERIES.subjectPrefix}.*.*`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: settings.replicas,
      duplicate_window: nanos(settings.duplicateWindowMs),
    })
    .catch(async (error: unknown) => {
      if (!isLostCreationRace(error)) throw error;
      // another instance made it meanwhile; if not, another stream holds its subjects, which the refusal says
      await jsm.streams.info(WEBHOOK_DELIVERIES.stream).catch(() => Promise.reject(error));
    });
}

/**
 * Puts a delivery in the queue and resolves once JetStream stored it. Its message id is the
 * webhook and the event: the same delivery queued again (its commit handled twice) within the
 * duplicate window is stored once; later, the receiver de-duplicates on the event id.
 */
export async function enqueueDelivery(js: JetStreamClient, job: DeliveryJob): Promise<void> {
  const subject = deliverySubject(job.tenant, job.webhook);
  await callNats(`queueing ${job.event.id} for ${job.webhook}`, () => js.publish(subject, JSON.stringify(job), { msgID: `${job.webhook}.${job.event.id}`, expect: { streamName: WEBHOOK_DELIVERIES.stream } }));
}
