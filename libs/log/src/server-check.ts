import type { NatsConnection } from '@nats-io/transport-node';
import { LogError, LogErrorCode } from './errors.js';

export const MINIMUM_SERVER_VERSION = '2.9.0';

function parseVersion(version: string): [number, number, number] | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

export function compareVersions(a: string, b: string): number {
  const left = parseVersion(a) ?? [0, 0, 0];
  const right = parseVersion(b) ?? [0, 0, 0];
  for (let index = 0; index < 3; index += 1) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** Fails fast with a clear error on a server Flotilla cannot run on. */
export function assertServerSupported(nc: NatsConnection): { version: string } {
  const info = nc.info;
  const version = info?.version ?? '0.0.0';
  if (compareVersions(version, MINIMUM_SERVER_VERSION) < 0) {
    throw new LogError(
      LogErrorCode.ServerTooOld,
      `nats-server ${version} is too old: Flotilla needs ${MINIMUM_SERVER_VERSION} or newer (per-subject sequences, direct get).`,
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
