import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { connect, nkeys } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeBus, loadBusSettings } from './bus-settings.js';
import { connectionOptions } from './connection-options.js';

// Each way a service can authenticate, against a real nats-server that requires it.

let dir: string;
const servers: NatsServerProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-credentials-'));
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server[Symbol.asyncDispose]()));
  await rm(dir, { recursive: true, force: true });
});

async function serve(config: string, name: string): Promise<NatsServerProcess> {
  const server = await NatsServerProcess.start({ storeDir: join(dir, name), config, jetstream: false });
  servers.push(server);
  return server;
}

async function secretFile(name: string, text: string | Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

/** Connects with settings read from this environment and proves the connection works with a request. */
async function roundTrip(environment: NodeJS.ProcessEnv): Promise<string> {
  const nc = await connect({
    ...connectionOptions(loadBusSettings(environment), { name: 'credentials-test', identity: 'test' }),
    maxReconnectAttempts: 0,
    timeout: 3_000,
  });
  try {
    const subscription = nc.subscribe('echo', { callback: (_error, message) => void message.respond(message.data) });
    const reply = await nc.request('echo', 'ping', { timeout: 2_000 });
    subscription.unsubscribe();
    return reply.string();
  } finally {
    await nc.close();
  }
}

const everything = { publish: '>', subscribe: '>' };

describe('credentials', () => {
  it('a user and password, from a file', async () => {
    const server = await serve(
      `authorization { users: [ ${JSON.stringify({ user: 'svc', password: 's3cret-password', permissions: everything })} ] }`,
      'user',
    );
    const passwordFile = await secretFile('svc.password', 's3cret-password\n');
    expect(
      await roundTrip({
        FLOTILLA_NATS_URL: server.url,
        FLOTILLA_NATS_USER: 'svc',
        FLOTILLA_NATS_PASSWORD_FILE: passwordFile,
      }),
    ).toBe('ping');
    expect(
      await roundTrip({
        FLOTILLA_NATS_URL: server.url,
        FLOTILLA_NATS_USER: 'svc',
        FLOTILLA_NATS_PASSWORD: 's3cret-password',
      }),
    ).toBe('ping');
    await expect(
      roundTrip({ FLOTILLA_NATS_URL: server.url, FLOTILLA_NATS_USER: 'svc', FLOTILLA_NATS_PASSWORD: 'wrong' }),
    ).rejects.toThrow(/authorization/i);
    // what may be logged names the user, never the password
    expect(
      JSON.stringify(
        describeBus(
          loadBusSettings({
            FLOTILLA_NATS_URL: server.url,
            FLOTILLA_NATS_USER: 'svc',
            FLOTILLA_NATS_PASSWORD: 's3cret-password',
          }),
        ),
      ),
    ).not.toContain('s3cret');
  });

  it('an nkey seed file', async () => {
    const user = nkeys.createUser();
    const server = await serve(
      `authorization { users: [ ${JSON.stringify({ nkey: user.getPublicKey(), permissions: everything })} ] }`,
      'nkey',
    );
    const seedFile = await secretFile('svc.nk', new TextDecoder().decode(user.getSeed()));
    expect(loadBusSettings({ FLOTILLA_NATS_NKEY_SEED_FILE: seedFile }).auth).toMatchObject({
      kind: 'nkey',
      publicKey: user.getPublicKey(),
    });
    expect(await roundTrip({ FLOTILLA_NATS_URL: server.url, FLOTILLA_NATS_NKEY_SEED_FILE: seedFile })).toBe('ping');
    const stranger = await secretFile('stranger.nk', new TextDecoder().decode(nkeys.createUser().getSeed()));
    await expect(roundTrip({ FLOTILLA_NATS_URL: server.url, FLOTILLA_NATS_NKEY_SEED_FILE: stranger })).rejects.toThrow(
      /authorization/i,
    );
  });

  it('a .creds file (decentralised JWT authentication)', async () => {
    const operator = nkeys.createOperator();
    const account = nkeys.createAccount();
    const user = nkeys.createUser();
    const operatorJwt = await encodeOperator('flotilla-test', operator);
    const accountJwt = await encodeAccount(
      'services',
      account,
      { limits: { conn: -1, subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, leaf: -1 } },
      { signer: operator },
    );
    const userJwt = await encodeUser('tool-runner', user, account);
    const server = await serve(
      `operator: ${operatorJwt}\nresolver: MEMORY\nresolver_preload: { ${account.getPublicKey()}: ${accountJwt} }\n`,
      'creds',
    );
    const credsFile = await secretFile('svc.creds', fmtCreds(userJwt, user));
    expect(await roundTrip({ FLOTILLA_NATS_URL: server.url, FLOTILLA_NATS_CREDS_FILE: credsFile })).toBe('ping');
    // a user signed by another account is refused
    const otherAccount = nkeys.createAccount();
    const forged = await secretFile('forged.creds', fmtCreds(await encodeUser('forged', user, otherAccount), user));
    await expect(roundTrip({ FLOTILLA_NATS_URL: server.url, FLOTILLA_NATS_CREDS_FILE: forged })).rejects.toThrow(
      /authorization/i,
    );
  });

  it('TLS with a CA and a client certificate', async () => {
    const pki = join(dir, 'pki');
    const openssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    execFileSync('mkdir', ['-p', pki]);
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=flotilla-test-ca',
      '-keyout',
      join(pki, 'ca.key'),
      '-out',
      join(pki, 'ca.pem'),
    );
    const issue = (name: string, extensions: string): void => {
      openssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        `/CN=${name}`,
        '-keyout',
        join(pki, `${name}.key`),
        '-out',
        join(pki, `${name}.csr`),
      );
      execFileSync('sh', ['-c', `printf '%s\\n' '${extensions}' > ${join(pki, `${name}.ext`)}`]);
      openssl(
        'x509',
        '-req',
        '-in',
        join(pki, `${name}.csr`),
        '-CA',
        join(pki, 'ca.pem'),
        '-CAkey',
        join(pki, 'ca.key'),
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        join(pki, `${name}.ext`),
        '-out',
        join(pki, `${name}.pem`),
      );
    };
    issue('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
    issue('client', 'extendedKeyUsage=clientAuth');
    for (const key of ['ca.key', 'server.key', 'client.key']) await chmod(join(pki, key), 0o600);
    const tls = {
      cert_file: join(pki, 'server.pem'),
      key_file: join(pki, 'server.key'),
      ca_file: join(pki, 'ca.pem'),
      verify: true,
    };
    const server = await serve(`tls: ${JSON.stringify(tls)}`, 'tls');
    const base = {
      FLOTILLA_NATS_URL: `tls://127.0.0.1:${server.port}`,
      FLOTILLA_NATS_TLS_CA_FILE: join(pki, 'ca.pem'),
    };
    expect(
      await roundTrip({
        ...base,
        FLOTILLA_NATS_TLS_CERT_FILE: join(pki, 'client.pem'),
        FLOTILLA_NATS_TLS_KEY_FILE: join(pki, 'client.key'),
      }),
    ).toBe('ping');
    // without a client certificate, or trusting another CA, the connection fails
    await expect(roundTrip(base)).rejects.toThrow();
    await expect(
      roundTrip({
        FLOTILLA_NATS_URL: `tls://127.0.0.1:${server.port}`,
        FLOTILLA_NATS_TLS_CERT_FILE: join(pki, 'client.pem'),
        FLOTILLA_NATS_TLS_KEY_FILE: join(pki, 'client.key'),
      }),
    ).rejects.toThrow();
  }, 30_000);
});

describe('settings that cannot work are refused at start, naming the variable', () => {
  it.each([
    [{ FLOTILLA_NATS_URL: 'nats://svc:pw@127.0.0.1:4222' }, /FLOTILLA_NATS_URL must not carry credentials/],
    [{ FLOTILLA_NATS_URL: 'http://127.0.0.1:4222' }, /http:\/\/ is not supported/],
    [{ FLOTILLA_NATS_URL: ' , ' }, /FLOTILLA_NATS_URL is empty/],
    [{ FLOTILLA_NATS_USER: 'svc' }, /FLOTILLA_NATS_USER needs FLOTILLA_NATS_PASSWORD or FLOTILLA_NATS_PASSWORD_FILE/],
    [{ FLOTILLA_NATS_PASSWORD: 'pw' }, /FLOTILLA_NATS_PASSWORD needs FLOTILLA_NATS_USER/],
    [
      { FLOTILLA_NATS_USER: 'svc', FLOTILLA_NATS_PASSWORD: 'pw', FLOTILLA_NATS_CREDS_FILE: '/x' },
      /one way to authenticate/,
    ],
    [
      { FLOTILLA_NATS_USER: 'svc', FLOTILLA_NATS_PASSWORD_FILE: '/nonexistent/password' },
      /FLOTILLA_NATS_PASSWORD_FILE: cannot read \/nonexistent\/password \(ENOENT\)/,
    ],
    [{ FLOTILLA_NATS_CREDS_FILE: '/nonexistent/svc.creds' }, /FLOTILLA_NATS_CREDS_FILE: cannot read/],
    [
      { FLOTILLA_NATS_TLS_CERT_FILE: '/x.pem' },
      /needs both FLOTILLA_NATS_TLS_CERT_FILE and FLOTILLA_NATS_TLS_KEY_FILE/,
    ],
  ])('%j', (environment, message) => {
    expect(() => loadBusSettings(environment)).toThrow(message);
  });

  it('checks what the files hold', async () => {
    const notSeed = await secretFile('not-a-seed', 'SAxxxx');
    expect(() => loadBusSettings({ FLOTILLA_NATS_NKEY_SEED_FILE: notSeed })).toThrow(/does not hold a user nkey seed/);
    const badSeed = await secretFile('bad-seed', 'SUNOTAVALIDSEED');
    expect(() => loadBusSettings({ FLOTILLA_NATS_NKEY_SEED_FILE: badSeed })).toThrow(/malformed nkey seed/);
    const notCreds = await secretFile('not.creds', 'hello');
    expect(() => loadBusSettings({ FLOTILLA_NATS_CREDS_FILE: notCreds })).toThrow(/is not a NATS \.creds file/);
    const notCa = await secretFile('ca.txt', 'hello');
    expect(() => loadBusSettings({ FLOTILLA_NATS_TLS_CA_FILE: notCa })).toThrow(
      /FLOTILLA_NATS_TLS_CA_FILE: .* does not hold a PEM certificate/,
    );
  });

  it('warns of a key file others may read and of credentials sent in clear off this machine', async () => {
    const path = await secretFile('open.password', 'pw');
    await chmod(path, 0o644);
    const settings = loadBusSettings({
      FLOTILLA_NATS_URL: 'nats://nats.example:4222',
      FLOTILLA_NATS_USER: 'svc',
      FLOTILLA_NATS_PASSWORD_FILE: path,
    });
    expect(settings.warnings.join('\n')).toMatch(/may be read by other users \(mode 644\)/);
    expect(settings.warnings.join('\n')).toMatch(/sent in clear to nats:\/\/nats.example:4222/);
    expect(
      loadBusSettings({
        FLOTILLA_NATS_URL: 'tls://nats.example:4222',
        FLOTILLA_NATS_USER: 'svc',
        FLOTILLA_NATS_PASSWORD: 'pw',
      }).warnings,
    ).toEqual([]);
  });

  it('accepts several servers, with or without a scheme', () => {
    expect(loadBusSettings({ FLOTILLA_NATS_URL: 'nats://a:4222, b:4223,tls://c:4224' }).servers).toEqual([
      'nats://a:4222',
      'nats://b:4223',
      'tls://c:4224',
    ]);
  });
});
