import { Buckets, openBucket } from '@flotilla/bus';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { SecretsError, SecretsErrorCode } from './errors.js';

/** The values, encrypted: written by the gateway, read only by the tool runners. */
export const DEFAULT_SECRETS_BUCKET = Buckets.secrets;
/** The names alone (same keys, no value): what the gateway lists and checks, since it may not read the values' bucket. */
export const DEFAULT_SECRET_NAMES_BUCKET = Buckets.secretNames;

/**
 * Creates the secrets bucket (history 1: a replaced or removed value leaves no older ciphertext
 * behind) or opens the existing one. Safe to call from every service at start-up, concurrently.
 */
export function openSecretsBucket(nc: NatsConnection, bucket: string, replicas: number): Promise<KV> {
  return openSecretBucket(nc, bucket, {
    history: 1,
    replicas,
    description: 'Flotilla secrets (AES-256-GCM ciphertexts; names in the keys)',
  });
}

/**
 * Creates the names bucket or opens the existing one. Its reads are not direct gets (which a
 * replica may answer from behind the leader): the writer decides from them whether a name is
 * there, and the order of its writes relies on seeing the latest.
 */
export function openSecretNamesBucket(nc: NatsConnection, bucket: string, replicas: number): Promise<KV> {
  return openSecretBucket(nc, bucket, {
    history: 1,
    replicas,
    allow_direct: false,
    description: 'Flotilla secret names (the keys of the secrets bucket; no values)',
  });
}

type BucketSettings = {
  readonly history: number;
  readonly replicas: number;
  readonly description: string;
  readonly allow_direct?: boolean;
};

/** Opening needs only the stream's info (and its creation when missing): no read of its contents. */
async function openSecretBucket(nc: NatsConnection, bucket: string, settings: BucketSettings): Promise<KV> {
  try {
    return await openBucket(nc, bucket, settings);
  } catch (error) {
    throw new SecretsError(SecretsErrorCode.BucketUnavailable, (error as Error).message, { cause: error });
  }
}
