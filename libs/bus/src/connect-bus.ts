import { MINIMUM_SERVER_VERSION, isSupportedServerVersion } from '@flotilla/nats-embedded';
import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import type { BusSettings } from './bus-settings.js';
import { connectionOptions, type BusConnectionOptions } from './connection-options.js';
import { UnsupportedServerError } from './errors.js';

/** How a process reconnects and pings; where it connects and as whom come from the settings. */
export type BusConnectOptions = Omit<
  ConnectionOptions,
  'servers' | 'name' | 'inboxPrefix' | 'authenticator' | 'tls' | 'user' | 'pass' | 'token'
>;

/**
 * Connects to NATS as the settings say, and refuses a server Flotilla cannot run on (older than
 * MINIMUM_SERVER_VERSION, or without JetStream) with an UnsupportedServerError saying what to do,
 * after closing the connection. Every Flotilla process connects through here: each service (its
 * KV-only start-up included), the launcher, the tap and the auditor.
 */
export async function connectBus(
  settings: BusSettings,
  identity: BusConnectionOptions,
  options: BusConnectOptions = {},
): Promise<NatsConnection> {
  const nc = await connect({ ...connectionOptions(settings, identity), ...options });
  try {
    assertServerSupported(nc);
  } catch (error) {
    await nc.close().catch(() => undefined);
    throw error;
  }
  return nc;
}

/** Throws an UnsupportedServerError when the connected server is older than MINIMUM_SERVER_VERSION or has no JetStream. */
export function assertServerSupported(nc: NatsConnection): { version: string } {
  const info = nc.info;
  const version = info?.version ?? 'unknown';
  if (!isSupportedServerVersion(version)) {
    throw new UnsupportedServerError(
      'server_too_old',
      `nats-server ${version} at ${nc.getServer()} is too old: Flotilla needs nats-server ${MINIMUM_SERVER_VERSION} or newer ` +
        '(reads by direct-get batch without a consumer, the lost-answer check on the subject tail, atomic batches, message TTLs and schedules); ' +
        'upgrade it (docs/operations.md, "NATS server version")',
    );
  }
  if (info && info.jetstream !== true) {
    throw new UnsupportedServerError(
      'jetstream_unavailable',
      `nats-server ${version} at ${nc.getServer()} does not have JetStream enabled: start it with -js (or jetstream {} in its config)`,
    );
  }
  return { version };
}
