import { JetStreamApiError } from '@nats-io/jetstream';
import { WebhooksError, WebhooksErrorCode } from './errors.js';

/**
 * Runs one bucket or stream operation, turning NATS failures into WebhooksErrors:
 * `bucket_unavailable` when JetStream refused it, `unavailable` (retryable) for a timeout or a
 * lost connection. The message names the operation, never a secret.
 */
export async function callNats<T>(what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof WebhooksError) throw error;
    const code =
      error instanceof JetStreamApiError ? WebhooksErrorCode.BucketUnavailable : WebhooksErrorCode.Unavailable;
    throw new WebhooksError(code, `${what} failed: ${(error as Error).message}`, { cause: error });
  }
}
