import { Buckets, openBucket } from '@flotilla/bus';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { WebhooksError, WebhooksErrorCode } from './errors.js';

export const DEFAULT_WEBHOOKS_BUCKET = Buckets.webhooks;

/**
 * Creates the registrations bucket or opens the existing one (the gateway and the webhooks
 * service alike, so both make it the same). History 1: a removed registration leaves no older
 * ciphertext behind. Its reads are not direct gets (a replica may answer from behind the leader):
 * a webhook created and then listed is listed.
 */
export async function openWebhooksBucket(
  nc: NatsConnection,
  replicas: number,
  bucket: string = DEFAULT_WEBHOOKS_BUCKET,
): Promise<KV> {
  try {
    return await openBucket(nc, bucket, {
      history: 1,
      replicas,
      allow_direct: false,
      description: 'Flotilla webhook registrations (signing secrets encrypted)',
    });
  } catch (error) {
    throw new WebhooksError(WebhooksErrorCode.BucketUnavailable, (error as Error).message, { cause: error });
  }
}
