import { JetStreamApiError } from '@nats-io/jetstream';
import { SecretsError, SecretsErrorCode } from './errors.js';

/**
 * Runs one bucket operation, turning NATS failures into SecretsErrors: `bucket_unavailable` when
 * JetStream refused it, `unavailable` (retryable) for a timeout or a lost connection. The
 * message names the operation and the KV key, never a value.
 */
export async function callBucket<T>(bucket: string, what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof SecretsError) throw error;
    const message = `${what} in the bucket ${bucket} failed: ${(error as Error).message}`;
    throw new SecretsError(
      error instanceof JetStreamApiError ? SecretsErrorCode.BucketUnavailable : SecretsErrorCode.Unavailable,
      message,
      { cause: error },
    );
  }
}
