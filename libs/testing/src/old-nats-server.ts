import { binaryVersion, compareVersions, MINIMUM_SERVER_VERSION } from '@flotilla/nats-embedded';

/** Debian's and Ubuntu's nats-server package installs its binary here (2.9.x on Debian 12). */
const DISTRIBUTION_BINARY = '/usr/sbin/nats-server';

export type OldNatsServer =
  { readonly binary: string; readonly version: string } | { readonly binary: undefined; readonly reason: string };

/**
 * A nats-server older than MINIMUM_SERVER_VERSION, for the tests of its refusal: NATS_OLD_SERVER_BIN
 * when set, else the distribution's package when it is older. When there is none, the reason a
 * test skips for. Start it with `NatsServerProcess.start({ binary })` (its own port and store).
 */
export function findOldNatsServer(env: NodeJS.ProcessEnv = process.env): OldNatsServer {
  const explicit = env['NATS_OLD_SERVER_BIN'];
  const binary = explicit || DISTRIBUTION_BINARY;
  const named = explicit ? `NATS_OLD_SERVER_BIN=${explicit}` : DISTRIBUTION_BINARY;
  const version = binaryVersion(binary);
  if (version === undefined)
    return {
      binary: undefined,
      reason: `no nats-server older than ${MINIMUM_SERVER_VERSION} to test against: ${named} does not run (set NATS_OLD_SERVER_BIN to one, e.g. 2.10)`,
    };
  if (compareVersions(version, MINIMUM_SERVER_VERSION) >= 0) {
    return {
      binary: undefined,
      reason: `no nats-server older than ${MINIMUM_SERVER_VERSION} to test against: ${named} is ${version} (set NATS_OLD_SERVER_BIN to an older one, e.g. 2.10)`,
    };
  }
  return { binary, version };
}
