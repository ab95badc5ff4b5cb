import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

// bigint columns (counts, sequences) as numbers in tests: they stay far below 2^53
pg.types.setTypeParser(20, Number);

/** Where tests find a PostgreSQL that lets them create databases (trust auth on the local machine by default). */
export const TEST_DATABASE_VARIABLE = 'FLOTILLA_TEST_DATABASE_URL';
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export type TestDatabase = AsyncDisposable & {
  readonly name: string;
  /** The URL of the new database (give it to the sink as FLOTILLA_DATABASE_URL). */
  readonly url: string;
  /** A pool on it, for the test's own queries (ended at dispose). */
  readonly pool: pg.Pool;
};

let fallback: Promise<string> | undefined;

/**
 * The test PostgreSQL's administrator URL: FLOTILLA_TEST_DATABASE_URL; else the machine's server
 * on 127.0.0.1:5432 when one answers; else a server of this test process's own (startPostgresServer,
 * ended when the process exits), so a machine with PostgreSQL's binaries but no running server works.
 */
export async function testDatabaseAdminUrl(): Promise<string> {
  const given = process.env[TEST_DATABASE_VARIABLE]?.trim();
  if (given) return given;
  fallback ??= (async () => {
    const probe = new pg.Client({ connectionString: DEFAULT_ADMIN_URL, connectionTimeoutMillis: 2_000 });
    try {
      await probe.connect();
      return DEFAULT_ADMIN_URL;
    } catch {
      const server = await startPostgresServer();
      if (!server)
        throw new Error(
          `no PostgreSQL for the tests: none answers at ${DEFAULT_ADMIN_URL}, no server binaries are installed (apt-get install postgresql), and ${TEST_DATABASE_VARIABLE} is not set`,
        );
      process.once('exit', () => server.kill());
      return server.url;
    } finally {
      await probe.end().catch(() => undefined);
    }
  })();
  return fallback;
}

/**
 * A fresh database with a unique name on the test PostgreSQL (testDatabaseAdminUrl), dropped at dispose.
 */
export async function createTestDatabase(adminUrl?: string): Promise<TestDatabase> {
  adminUrl ??= await testDatabaseAdminUrl();
  const name = `flotilla_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  pool.on('error', () => undefined); // a test's own server restarting
  return {
    name,
    url: url.toString(),
    pool,
    async [Symbol.asyncDispose]() {
      await pool.end().catch(() => undefined);
      const cleanup = new pg.Client({ connectionString: adminUrl });
      await cleanup.connect();
      try {
        await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/** The directory of PostgreSQL's server binaries (pg_config --bindir, else the newest of Debian's /usr/lib/postgresql/<version>/bin), or undefined. */
export function findPostgresBinaries(): string | undefined {
  const has = (dir: string): boolean => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (has(dir)) return dir;
  } catch {
    // no pg_config: look where Debian puts the servers
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => /^\d+$/.test(version))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  return versions.map((version) => join(root, version, 'bin')).find(has);
}

export type PostgresServer = AsyncDisposable & {
  /** An administrator's URL (database postgres, trust auth). */
  readonly url: string;
  readonly port: number;
  readonly running: boolean;
  /** Ends the server the way a crash would (immediate shutdown: no checkpoint, recovery at the next start). */
  crash(): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Ends it at once, synchronously (at the test process's exit). */
  kill(): void;
};

/**
 * A PostgreSQL server of the test's own, on a free port of 127.0.0.1, in a temporary data
 * directory (initdb refuses root: as root, the server runs as the `postgres` user). Undefined
 * when the machine has no PostgreSQL server binaries (the test then says it skips).
 */
export async function startPostgresServer(): Promise<PostgresServer | undefined> {
  const bin = findPostgresBinaries();
  if (!bin) return undefined;
  const asUser = process.getuid?.() === 0 ? postgresUser() : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-pg-'));
  if (asUser) await chown(dir, asUser.uid, asUser.gid);
  const data = join(dir, 'data');
  await run(
    join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C'],
    asUser,
  );
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const output: string[] = [];
  const start = async (): Promise<void> => {
    // fsync off: only an OS crash could lose what was committed, and the tests crash processes, not the OS
    const server = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
      },
    );
    child = server;
    for (const stream of [server.stdout, server.stderr])
      stream?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    exited = new Promise((resolve) => server.once('exit', () => resolve()));
    await waitAccepting(url, 30_000, () => output.join('').slice(-2_000));
  };
  await start();
  return {
    url,
    port,
    get running() {
      return child?.exitCode === null && child.signalCode === null;
    },
    async crash() {
      child?.kill('SIGQUIT');
      await exited;
    },
    start,
    kill: () => void child?.kill('SIGQUIT'),
    async [Symbol.asyncDispose]() {
      child?.kill('SIGQUIT');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function postgresUser(): { uid: number; gid: number } {
  try {
    return {
      uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
      gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
    };
  } catch {
    throw new Error(
      'running as root, a PostgreSQL server of its own needs the postgres user (apt-get install postgresql makes it)',
    );
  }
}

function run(
  command: string,
  args: readonly string[],
  asUser: { uid: number; gid: number } | undefined,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(asUser ? { uid: asUser.uid, gid: asUser.gid } : {}),
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${output.slice(-2_000)}`)),
    );
  });
}

async function waitAccepting(url: string, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL did not accept connections at ${url} within ${timeoutMs} ms: ${describe()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port')),
      );
    });
  });
}
