import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateSecretsKey, loadSecretsKey } from '@flotilla/secrets';

const KEY_VARIABLES: readonly string[] = ['FLOTILLA_SECRETS_KEY', 'FLOTILLA_SECRETS_KEY_FILE'];

/** The variables that carry the secrets key: no service inherits them from the launcher's environment. */
export function isSecretsKeySetting(name: string): boolean {
  return KEY_VARIABLES.includes(name);
}

/**
 * The services that decrypt or encrypt secrets: the gateway (users set them; webhook signing
 * secrets are stored encrypted), the tool runner (the sandbox gets them), the services that call a
 * conversation's model (a spec's model key may be a secret), and the webhooks service (it signs
 * with the webhooks' secrets). The projector never gets the key.
 */
export const SECRETS_SERVICES: ReadonlySet<string> = new Set([
  'gateway',
  'tool-runner',
  'step-worker',
  'condenser',
  'webhooks',
]);

export type SecretsKeySettings = {
  /** What the services of SECRETS_SERVICES get (and no other service). */
  readonly env: Readonly<Record<string, string>>;
  /** The key file the launcher keeps, when it is the one in use. */
  readonly file?: string;
  /** The file was created now (the first start with this home). */
  readonly created: boolean;
  /** Something the user should fix (a key file others can read). */
  readonly warning?: string;
};

/**
 * The secrets key of the embedded system: the launcher's own FLOTILLA_SECRETS_KEY or
 * FLOTILLA_SECRETS_KEY_FILE when it has one (checked here, so a bad key stops the launch), else
 * `<home>/secrets.key`, created with a fresh key (mode 0600) on the first start. An existing
 * file is never replaced: the secrets stored with its key could not be read without it.
 */
export async function secretsKeySettings(home: string, environment: NodeJS.ProcessEnv): Promise<SecretsKeySettings> {
  const given = Object.fromEntries(
    KEY_VARIABLES.flatMap((name) => (environment[name] ? [[name, environment[name]]] : [])),
  );
  if (Object.keys(given).length > 0) {
    loadSecretsKey(given);
    return { env: given, created: false };
  }
  const file = join(home, 'secrets.key');
  let created = false;
  const existing = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing === undefined) {
    try {
      await writeFile(file, `${generateSecretsKey()}\n`, { mode: 0o600, flag: 'wx' });
      created = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error; // another launcher wrote it first: use theirs
    }
  }
  const env = { FLOTILLA_SECRETS_KEY_FILE: file };
  loadSecretsKey(env); // a malformed file stops the launch here, naming it
  const mode = (await stat(file)).mode & 0o777;
  const warning =
    mode & 0o077 ? `${file} can be read by others (mode ${mode.toString(8)}): chmod 600 ${file}` : undefined;
  return { env, file, created, ...(warning ? { warning } : {}) };
}

/** A service's share of the settings: the key for the secrets services, nothing for the others. */
export function secretsEnvironmentFor(service: string, settings: SecretsKeySettings): Readonly<Record<string, string>> {
  return SECRETS_SERVICES.has(service) ? settings.env : {};
}
