import { jetstream, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV, type KvOptions } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { isLostCreationRace, whileUnavailable, type WhileUnavailableOptions } from './availability.js';

export type BucketErrorCode = 'jetstream_unavailable' | 'bucket_unavailable';

/** A KV bucket that could not be created or opened; the message names the bucket and the server. */
export class BucketError extends Error {
  override readonly name = 'BucketError';

  constructor(
    readonly code: BucketErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export type OpenBucketOptions = WhileUnavailableOptions & {
  /** Timeout of each KV request made through the bucket. Default 5 s. */
  readonly timeoutMs?: number;
};

const JETSTREAM_NOT_ENABLED_FOR_ACCOUNT = 10039;

/**
 * Creates a KV bucket with these settings, or opens the existing one. Safe to call from every
 * instance at start-up at once (a lost creation race is retried), and through a cluster's leader
 * elections and a node's restart (transient failures are waited out until the deadline). A server
 * or account without JetStream is a `BucketError` saying so, at once.
 */
export async function openBucket(
  nc: NatsConnection,
  bucket: string,
  settings: Partial<KvOptions>,
  options: OpenBucketOptions = {},
): Promise<KV> {
  const server = nc.getServer();
  if (nc.info && nc.info.jetstream !== true) {
    throw new BucketError(
      'jetstream_unavailable',
      `nats-server ${nc.info.version} at ${server} does not have JetStream enabled, which the bucket ${bucket} needs: start it with -js (or jetstream {} in its config).`,
    );
  }
  const kvm = new Kvm(jetstream(nc, { timeout: options.timeoutMs ?? 5_000 }));
  try {
    return await whileUnavailable(async () => {
      try {
        return await kvm.create(bucket, settings);
      } catch (error) {
        // another instance created it between this one's lookup and its creation: open it now
        if (isLostCreationRace(error)) return await kvm.create(bucket, settings);
        throw error;
      }
    }, options);
  } catch (error) {
    const noJetStream = error instanceof JetStreamApiError && error.code === JETSTREAM_NOT_ENABLED_FOR_ACCOUNT;
    throw new BucketError(
      noJetStream ? 'jetstream_unavailable' : 'bucket_unavailable',
      `could not create or open the bucket ${bucket} at ${server}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
