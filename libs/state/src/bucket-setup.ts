import { Buckets } from '@flotilla/bus';
import { jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { StateError, StateErrorCode } from './errors.js';

export const DEFAULT_SNAPSHOT_BUCKET = Buckets.snapshots;

export type SnapshotBucketOptions = {
  /** KV bucket name; default flotilla_conversations. */
  readonly bucket?: string;
  /** 1 locally, 3 in a cluster. Only used when the bucket is created. */
  readonly replicas?: number;
  /** Timeout of each KV request. Default 5 s. */
  readonly timeoutMs?: number;
};

const JETSTREAM_NOT_ENABLED_FOR_ACCOUNT = 10039;
const STREAM_NAME_IN_USE = 10058;

/**
 * Creates the snapshot bucket (history 1) or opens the existing one. Safe to call from every
 * service at start-up, concurrently. Fails with a clear StateError when JetStream is missing.
 */
export async function openSnapshotBucket(nc: NatsConnection, options: SnapshotBucketOptions = {}): Promise<KV> {
  const bucket = options.bucket ?? DEFAULT_SNAPSHOT_BUCKET;
  const server = nc.getServer();
  if (nc.info && nc.info.jetstream !== true) {
    throw new StateError(
      StateErrorCode.JetStreamUnavailable,
      `nats-server ${nc.info.version} at ${server} does not have JetStream enabled, which the snapshot bucket ${bucket} needs: ` +
        'start it with -js (or jetstream {} in its config).',
    );
  }
  try {
    await jetstreamManager(nc, { checkAPI: true, timeout: options.timeoutMs ?? 5_000 });
  } catch (error) {
    throw new StateError(
      StateErrorCode.JetStreamUnavailable,
      `JetStream is not available at ${server}: ${(error as Error).message}. Start nats-server with -js and check the account's JetStream limits.`,
      { cause: error },
    );
  }
  const kvm = new Kvm(jetstream(nc, { timeout: options.timeoutMs ?? 5_000 }));
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await kvm.create(bucket, { history: 1, replicas: options.replicas ?? 1, description: 'Flotilla conversation snapshots' });
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === STREAM_NAME_IN_USE && attempt < 3) continue; // lost a creation race
      const code =
        error instanceof JetStreamApiError && error.code === JETSTREAM_NOT_ENABLED_FOR_ACCOUNT
          ? StateErrorCode.JetStreamUnavailable
          : StateErrorCode.BucketUnavailable;
      throw new StateError(code, `could not create or open the snapshot bucket ${bucket} at ${server}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}
