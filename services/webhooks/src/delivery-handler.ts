import type { DeadLetter } from '@flotilla/api';
import type { CommitHandler, HandleOutcome } from '@flotilla/runtime';
import {
  parseDeliveryJob,
  signatureHeader,
  WebhookHeader,
  WebhooksError,
  type DeliveryJob,
  type StoredWebhook,
  type WebhookDirectory,
} from '@flotilla/webhooks';
import type { Counter, Histogram } from 'prom-client';
import { retryDelayMs } from './retry-delay.js';
import type { PostOutcome, postWebhook } from './webhook-post.js';
import type { WebhooksConfig } from './webhooks-config.js';

export type DeliveryHandlerParts = {
  readonly directory: WebhookDirectory;
  /** Resolves once the dead letter is stored. */
  readonly deadLetter: (tenant: string, deadLetter: DeadLetter) => Promise<void>;
  readonly config: WebhooksConfig;
  readonly post: typeof postWebhook;
  readonly metrics?: { readonly deliveries: Counter<'outcome'>; readonly seconds: Histogram<'outcome'> };
  readonly now?: () => Date;
  readonly random?: () => number;
  readonly userAgent?: string;
};

/**
 * What the webhooks service does with a delivery of its queue: POST the event, signed, to its
 * webhook. A 2xx answer acknowledges it; a failure leaves it to be redelivered after the retry
 * delay (JetStream's per-message delay: the attempt count is its delivery count, so an instance
 * that dies mid-attempt counts as one); the last attempt's failure, or an address that may not be
 * reached, makes a dead letter, stored before the delivery is acknowledged. A delivery whose
 * webhook was removed is dropped.
 */
export function createDeliveryHandler(parts: DeliveryHandlerParts): CommitHandler {
  const now = parts.now ?? (() => new Date());
  const userAgent = parts.userAgent ?? 'Flotilla-Webhooks/1';
  return async (delivery): Promise<HandleOutcome> => {
    const started = performance.now();
    const outcome = await handle();
    parts.metrics?.deliveries.inc({ outcome: outcome.outcome });
    parts.metrics?.seconds.observe({ outcome: outcome.outcome }, (performance.now() - started) / 1_000);
    return outcome;

    async function handle(): Promise<HandleOutcome> {
      const parsed = parseDeliveryJob(delivery.message.data);
      // the subject is <prefix>.<tenant>.<webhook>: the job must be that webhook's
      if (
        !parsed.ok ||
        !delivery.ref ||
        parsed.job.tenant !== delivery.ref.tenant ||
        parsed.job.webhook !== delivery.ref.conversation
      ) {
        delivery.logger.error(
          { subject: delivery.subject, reason: parsed.ok ? 'it is not the job of its subject' : parsed.reason },
          'an invalid delivery in the queue: dropped',
        );
        return { ack: true, outcome: 'invalid' };
      }
      const job = parsed.job;
      const webhook = await findWebhook(job);
      if (!webhook) return { ack: true, outcome: 'webhook_removed' };
      const attempt = delivery.deliveryCount;
      const result = await attemptDelivery(webhook, job, attempt);
      if (result.kind === 'delivered') return { ack: true, outcome: 'delivered' };
      const log = { webhook: webhook.id, event: job.event.id, attempt, error: result.error };
      if (result.kind === 'refused' || attempt >= parts.config.maxAttempts) {
        await parts.deadLetter(job.tenant, {
          webhook: webhook.id,
          event: job.event,
          attempts: attempt,
          enqueued_at: job.enqueued_at,
          last_attempt_at: now().toISOString(),
          last_error: result.error,
          last_status: result.kind === 'failed' ? result.status : null,
        });
        delivery.logger.warn(
          log,
          result.kind === 'refused'
            ? 'a webhook URL that may not be reached: dead-lettered'
            : 'a webhook delivery failed every attempt: dead-lettered',
        );
        return { ack: true, outcome: 'dead_lettered' };
      }
      const delayMs = retryDelayMs(
        attempt,
        { baseMs: parts.config.retryBaseMs, maxMs: parts.config.retryMaxMs },
        parts.random,
      );
      delivery.logger.info({ ...log, retryInMs: delayMs }, 'a webhook delivery failed; it will be tried again');
      return { ack: false, outcome: 'retry', delayMs };
    }
  };

  /** The job's webhook; one the directory does not know yet (registered on another instance a moment ago) is looked for again once it caught up. */
  async function findWebhook(job: DeliveryJob): Promise<StoredWebhook | undefined> {
    const known = parts.directory.find(job.tenant, job.webhook);
    if (known) return known;
    await parts.directory.caughtUp();
    return parts.directory.find(job.tenant, job.webhook);
  }

  async function attemptDelivery(webhook: StoredWebhook, job: DeliveryJob, attempt: number): Promise<PostOutcome> {
    let secret: string;
    try {
      secret = parts.directory.secretOf(webhook);
    } catch (error) {
      // a key that is not the one the secret was stored with: the operator's to fix, every attempt fails until then
      if (!(error instanceof WebhooksError)) throw error;
      return { kind: 'failed', status: null, error: error.message };
    }
    const body = JSON.stringify(job.event);
    return parts.post(webhook.url, body, {
      policy: parts.config.addresses,
      timeoutMs: parts.config.timeoutMs,
      headers: {
        'user-agent': userAgent,
        [WebhookHeader.Signature]: signatureHeader(secret, Math.floor(now().getTime() / 1_000), body),
        [WebhookHeader.EventId]: job.event.id,
        [WebhookHeader.EventType]: job.event.type,
        [WebhookHeader.WebhookId]: webhook.id,
        [WebhookHeader.Attempt]: String(attempt),
      },
    });
  }
}
