import { BucketError, Buckets, openBucket } from '@flotilla/bus';
import type { KV } from '@nats-io/kv';
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

/**
 * Creates the snapshot bucket (history 1) or opens the existing one. Safe to call from every
 * service at start-up, concurrently. Fails with a clear StateError when JetStream is missing.
 */
export async function openSnapshotBucket(nc: NatsConnection, options: SnapshotBucketOptions = {}): Promise<KV> {
  const bucket = options.bucket ?? DEFAULT_SNAPSHOT_BUCKET;
  try {
    return await openBucket(
      nc,
      bucket,
      { history: 1, replicas: options.replicas ?? 1, description: 'Flotilla conversation snapshots' },
      { timeoutMs: options.timeoutMs ?? 5_000 },
    );
  } catch (error) {
    const code =
      error instanceof BucketError && error.code === 'jetstream_unavailable'
        ? StateErrorCode.JetStreamUnavailable
        : StateErrorCode.BucketUnavailable;
    throw new StateError(code, (error as Error).message, { cause: error });
  }
}
