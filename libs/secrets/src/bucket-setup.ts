import { jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { SecretsError, SecretsErrorCode } from './errors.js';

export const DEFAULT_SECRETS_BUCKET = 'flotilla_secrets';

const STREAM_NAME_IN_USE = 10058;
const TIMEOUT_MS = 5_000;

/**
 * Creates the secrets bucket (history 1: a replaced or removed value leaves no older ciphertext
 * behind) or opens the existing one. Safe to call from every service at start-up, concurrently.
 */
export async function openSecretsBucket(nc: NatsConnection, bucket: string, replicas: number): Promise<KV> {
  const server = nc.getServer();
  if (nc.info && nc.info.jetstream !== true) {
    throw new SecretsError(
      SecretsErrorCode.BucketUnavailable,
      `nats-server ${nc.info.version} at ${server} does not have JetStream enabled, which the secrets bucket ${bucket} needs: start it with -js.`,
    );
  }
  try {
    await jetstreamManager(nc, { checkAPI: true, timeout: TIMEOUT_MS });
  } catch (error) {
    throw new SecretsError(SecretsErrorCode.BucketUnavailable, `JetStream is not available at ${server}: ${(error as Error).message}`, { cause: error });
  }
  const kvm = new Kvm(jetstream(nc, { timeout: TIMEOUT_MS }));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await kvm.create(bucket, { history: 1, replicas, description: 'Flotilla secrets (AES-256-GCM ciphertexts; names in the keys)' });
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === STREAM_NAME_IN_USE && attempt < 3) continue; // lost a creation race
      throw new SecretsError(SecretsErrorCode.BucketUnavailable, `could not create or open the secrets bucket ${bucket} at ${server}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
