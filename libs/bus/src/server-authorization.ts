import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BusVariables } from './bus-settings.js';
import { BusConfigError } from './errors.js';
import { identityName, permissionsFor, type Identity } from './permissions.js';
import { DEFAULT_STREAM_NAMES, type StreamNames } from './layout.js';

/** One user of a generated server configuration, with where its password is kept. */
export type GeneratedUser = {
  readonly identity: Identity;
  readonly user: string;
  readonly password: string;
  readonly passwordFile: string;
};

/**
 * The password of each identity, kept in `<dir>/<user>.password` (owner-only, created with 32
 * random bytes the first time, reused afterwards so a restarted server and its clients agree).
 */
export async function ensureUsers(dir: string, identities: readonly Identity[]): Promise<GeneratedUser[]> {
  for (const identity of identities) {
    if (typeof identity === 'object' && !/^[A-Za-z0-9_-]{1,64}$/.test(identity.tenantTap))
      throw new BusConfigError(
        `a tenant tap's tenant must be 1-64 characters of A-Z a-z 0-9 _ -, not ${JSON.stringify(identity.tenantTap)}`,
      );
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return Promise.all(
    identities.map(async (identity) => {
      const user = identityName(identity);
      const passwordFile = join(dir, `${user}.password`);
      const existing = await readFile(passwordFile, 'utf8').then(
        (text) => text.trim(),
        () => '',
      );
      const password = existing.length >= 32 ? existing : randomBytes(32).toString('base64url');
      if (password !== existing) await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
      return { identity, user, password, passwordFile };
    }),
  );
}

/** A nats-server `authorization` block: these users with their permissions, nobody anonymous. */
export function authorizationConfig(
  users: readonly GeneratedUser[],
  names: StreamNames = DEFAULT_STREAM_NAMES,
): string {
  const entries = users.map((user) => ({
    user: user.user,
    password: user.password,
    permissions: permissionsFor(user.identity, names),
  }));
  // nats-server reads JSON values; quoted strings keep `$JS…` from being taken for variables
  return `authorization {\n  users: ${JSON.stringify(entries, null, 2).replace(/\n/g, '\n  ')}\n}\n`;
}

/** The environment a process needs to connect as this user (the password stays in its file). */
export function userEnvironment(user: GeneratedUser): Record<string, string> {
  return { [BusVariables.user]: user.user, [BusVariables.passwordFile]: user.passwordFile };
}
