import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BusVariables, isBusCredentialSetting } from './bus-settings.js';
import { BusConfigError } from './errors.js';

/**
 * Where `./dev up` leaves what a tap needs to read its embedded system (`flotilla tap`,
 * `npm run audit`): the NATS URL and the read-only `tap` user's credential (its name and password
 * file; never the admin's), in `tap.json` of its home, owner-only, as `cli.json` is for the CLI.
 */
export const LOCAL_TAP_FILE = 'tap.json';

/** The local system's tap, as `tap.json` holds it. */
export type LocalTap = {
  readonly natsUrl: string;
  readonly user: string;
  readonly passwordFile: string;
  readonly file: string;
};

/** `tap.json` in the home a command reads: `$FLOTILLA_HOME`, by default `.flotilla` in the current directory. */
export function localTapFile(environment: Readonly<Record<string, string | undefined>>): string {
  const home = environment['FLOTILLA_HOME']?.trim();
  return join(home ? home : '.flotilla', LOCAL_TAP_FILE);
}

/** Writes `<home>/tap.json` (mode 0600): the embedded server's URL and the tap user's password file. */
export async function writeLocalTap(home: string, tap: Omit<LocalTap, 'file'>): Promise<void> {
  const file = join(home, LOCAL_TAP_FILE);
  // written anew (not over an older one's mode): readable by the owner only
  await rm(file, { force: true });
  await writeFile(
    file,
    `${JSON.stringify({ nats_url: tap.natsUrl, user: tap.user, password_file: tap.passwordFile }, null, 2)}\n`,
    { mode: 0o600 },
  );
}

/** Removes `<home>/tap.json` (a system on a NATS server of its own has no local tap to offer). */
export async function removeLocalTap(home: string): Promise<void> {
  await rm(join(home, LOCAL_TAP_FILE), { force: true });
}

/** The local tap of the home `environment` names, or undefined when there is no `tap.json`; throws a BusConfigError naming the file when it cannot be read. */
export function readLocalTap(
  environment: Readonly<Record<string, string | undefined>>,
  read: (file: string) => string = (file) => readFileSync(file, 'utf8'),
): LocalTap | undefined {
  const file = localTapFile(environment);
  let text: string;
  try {
    text = read(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new BusConfigError(
      `${file} cannot be read (${(error as Error).message}): fix its permissions or remove it (./dev up writes it again)`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new BusConfigError(
      `${file} is not valid JSON (${(error as Error).message}): remove it (./dev up writes it again)`,
    );
  }
  const {
    nats_url: natsUrl,
    user,
    password_file: passwordFile,
  } = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (
    typeof natsUrl !== 'string' ||
    typeof user !== 'string' ||
    typeof passwordFile !== 'string' ||
    !natsUrl ||
    !user ||
    !passwordFile
  ) {
    throw new BusConfigError(
      `${file} must hold {"nats_url": "…", "user": "…", "password_file": "…"}: remove it (./dev up writes it again)`,
    );
  }
  return { natsUrl, user, passwordFile, file };
}

/**
 * The NATS settings of a tap (`flotilla tap`, `npm run audit`): the environment's, with what the
 * local system's `tap.json` adds where the environment says nothing. Its URL when no server is
 * named (FLOTILLA_NATS_URL), and its credential when none is given and the server is its own:
 * the tap's password never goes to another server.
 */
export function withLocalTap(
  environment: Readonly<Record<string, string | undefined>>,
  tap: LocalTap | undefined,
): NodeJS.ProcessEnv {
  if (!tap) return { ...environment };
  const url = environment[BusVariables.url]?.trim() || tap.natsUrl;
  const credentialGiven = Object.entries(environment).some(
    ([name, value]) => isBusCredentialSetting(name) && !name.startsWith('FLOTILLA_NATS_TLS_') && value?.trim(),
  );
  const ownServer = url === tap.natsUrl;
  return {
    ...environment,
    [BusVariables.url]: url,
    ...(ownServer && !credentialGiven
      ? { [BusVariables.user]: tap.user, [BusVariables.passwordFile]: tap.passwordFile }
      : {}),
  };
}
