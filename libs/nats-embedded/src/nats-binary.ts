import { accessSync, constants } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryVersion, isSupportedServerVersion, MINIMUM_SERVER_VERSION } from './server-version.js';

/** Where `./dev` keeps the nats-server it fetched when the machine has none new enough. */
export const PROJECT_NATS_SERVER = resolve(
  fileURLToPath(new URL('../../../.cache/nats-server/nats-server', import.meta.url)),
);

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The nats-server to start: `NATS_SERVER_BIN` when set (used as given: a start on an old one is
 * refused by the services' version check), else the project's own (`./dev` fetches it), else the
 * first on PATH (or in the sbin directories) at least MINIMUM_SERVER_VERSION. An older one found on
 * the way (a distribution's package) is skipped; undefined when there is none.
 */
export function findNatsServerBinary(): string | undefined {
  const explicit = process.env['NATS_SERVER_BIN'];
  if (explicit) return explicit;
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/usr/local/bin', '/usr/local/sbin']);
  const candidates = [PROJECT_NATS_SERVER, ...dirs.filter((dir) => dir !== '').map((dir) => join(dir, 'nats-server'))];
  return candidates.find(
    (candidate) => executable(candidate) && isSupportedServerVersion(binaryVersion(candidate) ?? ''),
  );
}

/** Why no nats-server could be found, for the error a caller shows. */
export function missingNatsServerHint(): string {
  return `no nats-server ${MINIMUM_SERVER_VERSION} or newer: run ./dev setup (it fetches one into .cache/), put one on PATH, set NATS_SERVER_BIN, or set NATS_URL`;
}
