import { MINIMUM_SERVER_VERSION, isSupportedServerVersion } from '@flotilla/nats-embedded';
import type { NatsConnection } from '@nats-io/transport-node';
import { LogError, LogErrorCode } from './errors.js';

/**
 * Fails fast with a clear error on a server Flotilla cannot run on: one older than
 * MINIMUM_SERVER_VERSION (every service and the tap connect through here), or without JetStream.
 */
export function assertServerSupported(nc: NatsConnection): { version: string } {
  const info = nc.info;
  const version = info?.version ?? '0.0.0';
  if (!isSupportedServerVersion(version)) {
    throw new LogError(
      LogErrorCode.ServerTooOld,
      `nats-server ${version} at ${nc.getServer()} is too old: Flotilla needs nats-server ${MINIMUM_SERVER_VERSION} or newer ` +
        '(reads by direct-get batch without a consumer, the lost-answer check on the subject tail, atomic batches, message TTLs and schedules); ' +
        'upgrade it (docs/operations.md, "NATS server version")',
    );
  }
  if (info && info.jetstream !== true) {
    throw new LogError(
      LogErrorCode.JetStreamUnavailable,
      `nats-server ${version} at ${nc.getServer()} does not have JetStream enabled: start it with -js (or jetstream {} in its config).`,
    );
  }
  return { version };
}
