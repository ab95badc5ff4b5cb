import { WebhookEvent, WebhookId } from '@flotilla/api';
import { ensureWorkQueue, parseQueueMessage, WEBHOOK_DELIVERIES } from '@flotilla/bus';
import { TenantId, Timestamp } from '@flotilla/events';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
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
  const parsed = parseQueueMessage(DeliveryJob, data);
  return parsed.ok ? { ok: true, job: parsed.value } : parsed;
}

export type DeliveryQueueSettings = {
  readonly replicas: number;
  /** A job published again within this window (a commit handled twice) is stored once. */
  readonly duplicateWindowMs: number;
};

/**
 * The queue of deliveries still to make: a work-queue stream (a delivery leaves it when it is
 * acknowledged: done, or dead-lettered), one subject per webhook. Created by the webhooks service
 * when missing; an existing one is left as it is.
 */
export async function ensureDeliveryQueue(jsm: JetStreamManager, settings: DeliveryQueueSettings): Promise<void> {
  await ensureWorkQueue(jsm, {
    stream: WEBHOOK_DELIVERIES.stream,
    description: 'Flotilla webhook deliveries still to make',
    subjects: [`${WEBHOOK_DELIVERIES.subjectPrefix}.*.*`],
    ...settings,
  });
}

/**
 * Puts a delivery in the queue and resolves once JetStream stored it. Its message id is the
 * webhook and the event: the same delivery queued again (its commit handled twice) within the
 * duplicate window is stored once; later, the receiver de-duplicates on the event id.
 */
export async function enqueueDelivery(js: JetStreamClient, job: DeliveryJob): Promise<void> {
  const subject = deliverySubject(job.tenant, job.webhook);
  await callNats(`queueing ${job.event.id} for ${job.webhook}`, () =>
    js.publish(subject, JSON.stringify(job), {
      msgID: `${job.webhook}.${job.event.id}`,
      expect: { streamName: WEBHOOK_DELIVERIES.stream },
    }),
  );
}
