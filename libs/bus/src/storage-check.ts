import type { JetStreamManager } from '@nats-io/jetstream';
import { bucketStream, Buckets } from './layout.js';
import { SERVICE_BUCKETS, type ServiceName } from './permissions.js';
import { describeDrift, replicasWarning, streamDrift, type StorageSettings } from './storage-settings.js';

/**
 * Compares the buckets a service uses (those that exist) with the configured replicas, and the
 * server with the replica count: one warning per problem, for the service to log at start.
 * (The events stream is compared where it is opened, in the log.)
 */
export async function checkBucketStorage(
  jsm: JetStreamManager,
  service: string,
  settings: StorageSettings,
  serverInfo: { cluster?: string } | undefined,
): Promise<string[]> {
  const warnings: string[] = [];
  const clustered = replicasWarning(serverInfo, settings.replicas);
  if (clustered) warnings.push(clustered);
  for (const [role] of SERVICE_BUCKETS[service as ServiceName] ?? []) {
    const stream = bucketStream(Buckets[role]);
    const info = await jsm.streams.info(stream).catch(() => undefined);
    if (!info) continue;
    const drifts = streamDrift(info.config, { num_replicas: settings.replicas });
    if (drifts.length > 0) warnings.push(describeDrift(stream, drifts));
  }
  return warnings;
}
