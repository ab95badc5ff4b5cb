import { readFileSync, statSync } from 'node:fs';
import { nkeys } from '@nats-io/transport-node';
import { BusConfigError } from './errors.js';

/** How a process proves who it is to NATS. Secrets stay in files or the environment; these hold where to find them. */
export type BusAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'user'; readonly user: string; readonly password: SecretSource }
  | { readonly kind: 'nkey'; readonly seedFile: string; readonly publicKey: string }
  | { readonly kind: 'creds'; readonly credsFile: string };

/** A secret read when it is needed (each connect and reconnect), so a rotated file is picked up; `from` names where it is. */
export type SecretSource = { readonly from: string; read(): string };

export type BusTls = { readonly caFile?: string; readonly certFile?: string; readonly keyFile?: string };

export type BusSettings = {
  readonly servers: readonly string[];
  readonly auth: BusAuth;
  /** Set when TLS is required (a `tls://` server or any TLS file given). */
  readonly tls: BusTls | undefined;
  /** Problems that do not stop the process (e.g. a key file others may read). */
  readonly warnings: readonly string[];
};

/** The variables, in one place: the error messages and the docs name them. */
export const BusVariables = {
  url: 'FLOTILLA_NATS_URL',
  user: 'FLOTILLA_NATS_USER',
  password: 'FLOTILLA_NATS_PASSWORD',
  passwordFile: 'FLOTILLA_NATS_PASSWORD_FILE',
  nkeySeedFile: 'FLOTILLA_NATS_NKEY_SEED_FILE',
  credsFile: 'FLOTILLA_NATS_CREDS_FILE',
  tlsCaFile: 'FLOTILLA_NATS_TLS_CA_FILE',
  tlsCertFile: 'FLOTILLA_NATS_TLS_CERT_FILE',
  tlsKeyFile: 'FLOTILLA_NATS_TLS_KEY_FILE',
} as const;

/** Every variable that carries a credential or names where one is: never passed on to what a service runs. */
export function isBusCredentialSetting(name: string): boolean {
  return name !== BusVariables.url && (Object.values(BusVariables) as string[]).includes(name);
}

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/**
 * Reads the NATS settings from the environment and checks them before anything connects: the
 * server URLs (comma-separated, no credentials in them), at most one way to authenticate, files
 * that exist and hold what they should, TLS files that go together. Throws a BusConfigError
 * naming the variable.
 */
export function loadBusSettings(environment: NodeJS.ProcessEnv = process.env): BusSettings {
  const value = (name: string): string | undefined => {
    const raw = environment[name]?.trim();
    return raw === undefined || raw === '' ? undefined : raw;
  };
  const warnings: string[] = [];
  const servers = parseServers(value(BusVariables.url) ?? DEFAULT_NATS_URL);

  const user = value(BusVariables.user);
  const password = value(BusVariables.password);
  const passwordFile = value(BusVariables.passwordFile);
  const seedFile = value(BusVariables.nkeySeedFile);
  const credsFile = value(BusVariables.credsFile);
  const chosen = [
    user && BusVariables.user,
    seedFile && BusVariables.nkeySeedFile,
    credsFile && BusVariables.credsFile,
  ].filter(Boolean);
  if (chosen.length > 1) throw new BusConfigError(`give one way to authenticate to NATS, not ${chosen.join(' and ')}`);
  if ((password || passwordFile) && !user)
    throw new BusConfigError(
      `${password ? BusVariables.password : BusVariables.passwordFile} needs ${BusVariables.user}`,
    );

  let auth: BusAuth = { kind: 'none' };
  if (user) {
    if (password && passwordFile)
      throw new BusConfigError(`give ${BusVariables.password} or ${BusVariables.passwordFile}, not both`);
    if (!password && !passwordFile)
      throw new BusConfigError(`${BusVariables.user} needs ${BusVariables.password} or ${BusVariables.passwordFile}`);
    if (passwordFile) {
      if (readSecretFile(BusVariables.passwordFile, passwordFile, warnings).trim() === '')
        throw new BusConfigError(`${BusVariables.passwordFile}: ${passwordFile} is empty`);
    }
    const source: SecretSource = passwordFile
      ? { from: passwordFile, read: () => readFileSync(passwordFile, 'utf8').trim() }
      : { from: BusVariables.password, read: () => password ?? '' };
    auth = { kind: 'user', user, password: source };
  } else if (seedFile) {
    auth = {
      kind: 'nkey',
      seedFile,
      publicKey: userSeedPublicKey(readSecretFile(BusVariables.nkeySeedFile, seedFile, warnings).trim(), seedFile),
    };
  } else if (credsFile) {
    checkCreds(readSecretFile(BusVariables.credsFile, credsFile, warnings), credsFile);
    auth = { kind: 'creds', credsFile };
  }

  const caFile = value(BusVariables.tlsCaFile);
  const certFile = value(BusVariables.tlsCertFile);
  const keyFile = value(BusVariables.tlsKeyFile);
  if (Boolean(certFile) !== Boolean(keyFile)) {
    throw new BusConfigError(
      `a client certificate needs both ${BusVariables.tlsCertFile} and ${BusVariables.tlsKeyFile}`,
    );
  }
  if (caFile) readPublicFile(BusVariables.tlsCaFile, caFile, 'CERTIFICATE');
  if (certFile) readPublicFile(BusVariables.tlsCertFile, certFile, 'CERTIFICATE');
  if (keyFile) {
    const key = readSecretFile(BusVariables.tlsKeyFile, keyFile, warnings);
    if (!key.includes('PRIVATE KEY'))
      throw new BusConfigError(`${BusVariables.tlsKeyFile}: ${keyFile} does not hold a PEM private key`);
  }
  const wantsTls = servers.some((server) => server.startsWith('tls://')) || caFile || certFile;
  const tls: BusTls | undefined = wantsTls
    ? { ...(caFile ? { caFile } : {}), ...(certFile ? { certFile } : {}), ...(keyFile ? { keyFile } : {}) }
    : undefined;
  if (!tls && auth.kind !== 'none' && servers.some((server) => !isLoopback(server))) {
    warnings.push(
      `NATS credentials are sent in clear to ${servers.filter((server) => !isLoopback(server)).join(', ')}: use tls:// or ${BusVariables.tlsCaFile}`,
    );
  }
  return { servers, auth, tls, warnings };
}

function parseServers(text: string): string[] {
  const servers = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (servers.length === 0) throw new BusConfigError(`${BusVariables.url} is empty`);
  return servers.map((server) => {
    const withScheme = /^[a-z]+:\/\//i.test(server) ? server : `nats://${server}`;
    let url: URL;
    try {
      url = new URL(withScheme);
    } catch {
      throw new BusConfigError(
        `${BusVariables.url}: ${JSON.stringify(server)} is not a server address (nats://host:port or tls://host:port)`,
      );
    }
    if (url.protocol !== 'nats:' && url.protocol !== 'tls:')
      throw new BusConfigError(`${BusVariables.url}: ${url.protocol}// is not supported (nats:// or tls://)`);
    if (url.username || url.password) {
      // a URL is logged and shown in listings; the credential goes in its own setting
      throw new BusConfigError(
        `${BusVariables.url} must not carry credentials: give them with ${BusVariables.user} and ${BusVariables.passwordFile}, ${BusVariables.nkeySeedFile} or ${BusVariables.credsFile}`,
      );
    }
    if (url.hostname === '') throw new BusConfigError(`${BusVariables.url}: ${JSON.stringify(server)} names no host`);
    return `${url.protocol}//${url.host}`;
  });
}

function isLoopback(server: string): boolean {
  const host = new URL(server).hostname;
  return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
}

function readSecretFile(variable: string, path: string, warnings: string[]): string {
  const text = readFile(variable, path);
  const mode = statSync(path).mode;
  if ((mode & 0o077) !== 0)
    warnings.push(`${variable}: ${path} may be read by other users (mode ${(mode & 0o777).toString(8)}); chmod 600 it`);
  return text;
}

function readPublicFile(variable: string, path: string, pem: string): void {
  if (!readFile(variable, path).includes(`BEGIN ${pem}`))
    throw new BusConfigError(`${variable}: ${path} does not hold a PEM ${pem.toLowerCase()}`);
}

function readFile(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new BusConfigError(
      `${variable}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      { cause: error },
    );
  }
}

function userSeedPublicKey(seed: string, path: string): string {
  if (!seed.startsWith('SU'))
    throw new BusConfigError(
      `${BusVariables.nkeySeedFile}: ${path} does not hold a user nkey seed (one starts with SU)`,
    );
  try {
    return nkeys.fromSeed(new TextEncoder().encode(seed)).getPublicKey();
  } catch (error) {
    throw new BusConfigError(`${BusVariables.nkeySeedFile}: ${path} holds a malformed nkey seed`, { cause: error });
  }
}

function checkCreds(text: string, path: string): void {
  if (!/-----BEGIN NATS USER JWT-----/.test(text) || !/-----BEGIN USER NKEY SEED-----/.test(text)) {
    throw new BusConfigError(
      `${BusVariables.credsFile}: ${path} is not a NATS .creds file (it needs a user JWT and a user nkey seed)`,
    );
  }
}

/** What may be logged about the settings: servers, how the process authenticates and as whom, never a secret. */
export function describeBus(settings: BusSettings): { servers: readonly string[]; auth: string; tls: boolean } {
  const auth = settings.auth;
  const who =
    auth.kind === 'user'
      ? `user ${auth.user}`
      : auth.kind === 'nkey'
        ? `nkey ${auth.publicKey}`
        : auth.kind === 'creds'
          ? `creds ${auth.credsFile}`
          : 'anonymous';
  return { servers: settings.servers, auth: who, tls: settings.tls !== undefined };
}
