export { DEFAULT_WEBHOOKS_BUCKET, openWebhooksBucket } from './bucket-setup.js';
export { DEFAULT_DEAD_LETTERS_BUCKET, DeadLetterStore } from './dead-letter-store.js';
export type { DeadLetterBucketSettings } from './dead-letter-store.js';
export {
  DeliveryJob,
  deliverySubject,
  enqueueDelivery,
  ensureDeliveryQueue,
  parseDeliveryJob,
} from './delivery-queue.js';
export type { DeliveryQueueSettings } from './delivery-queue.js';
export { WebhooksError, WebhooksErrorCode } from './errors.js';
export { DEFAULT_SIGNATURE_TOLERANCE_SECONDS, signatureHeader, verifySignature, WebhookHeader } from './signature.js';
export type { SignatureCheck } from './signature.js';
export { newWebhookId, newWebhookSecret, publicWebhook, StoredWebhook } from './stored-webhook.js';
export { WebhookDirectory } from './webhook-directory.js';
export type { WebhookDirectoryOptions } from './webhook-directory.js';
export { webhookEventId, webhookEventsOf } from './webhook-events.js';
export { WebhookRegistry } from './webhook-registry.js';
export type { WebhookRegistryOptions } from './webhook-registry.js';
