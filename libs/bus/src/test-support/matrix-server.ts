// A real nats-server configured from the permission matrix, for the permissions-*.test.ts files:
// a connection as each identity, and every refusal the server logs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll } from 'vitest';
import { loadBusSettings } from '../bus-settings.js';
import { connectionOptions } from '../connection-options.js';
import { Buckets, DEFAULT_STREAM_NAME } from '../layout.js';
import { SERVICES, type Identity } from '../permissions.js';
import { authorizationConfig, ensureUsers, userEnvironment, type GeneratedUser } from '../server-authorization.js';

let dir: string;
export let server: NatsServerProcess;
let users: Map<string, GeneratedUser>;
export const violations: string[] = [];
const open: NatsConnection[] = [];

export async function as(identity: Identity): Promise<NatsConnection> {
  const user = users.get(typeof identity === 'string' ? identity : `tap-${identity.tenantTap}`)!;
  const nc = await connect({
    ...connectionOptions(loadBusSettings({ FLOTILLA_NATS_URL: server.url, ...userEnvironment(user) }), {
      name: user.user,
      identity: user.user,
    }),
    maxReconnectAttempts: 0,
  });
  open.push(nc);
  return nc;
}

/** Resolves to 'refused' when the server denies it (the error names the permission), else 'allowed'. */
export async function attempt(operation: () => Promise<unknown>): Promise<'allowed' | 'refused'> {
  try {
    await operation();
    return 'allowed';
  } catch (error) {
    const text = `${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`;
    if (/permission/i.test(text)) return 'refused';
    throw error;
  }
}

/** Before the file's tests: the server, with the stream, the buckets and a few commits the services would find; after them, gone. */
export function startMatrixServer(): void {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flotilla-permissions-'));
    users = new Map(
      (await ensureUsers(join(dir, 'users'), [...SERVICES, 'admin', 'tap', { tenantTap: 'acme' }])).map((user) => [
        user.user,
        user,
      ]),
    );
    server = await NatsServerProcess.start({
      storeDir: join(dir, 'store'),
      config: authorizationConfig([...users.values()]),
      onLog: (line) => (line.includes('Violation') ? violations.push(line) : undefined),
    });
    // the admin sets up what the services would create at start
    const admin = await as('admin');
    const jsm = await jetstreamManager(admin);
    await jsm.streams.add({ name: DEFAULT_STREAM_NAME, subjects: ['flotilla.ev.*.*.*'], allow_direct: true });
    const kvm = new Kvm(admin);
    for (const name of Object.values(Buckets)) await kvm.create(name, { history: 1 });
    const js = jetstream(admin);
    await js.publish('flotilla.ev.acme.c1.user', 'acme commit');
    await js.publish('flotilla.ev.globex.c1.user', 'globex commit');
    await (await kvm.open(Buckets.secrets)).put('acme.defaults.TOKEN', 'ciphertext');
  }, 30_000);

  afterAll(async () => {
    await Promise.all(open.map((nc) => nc.close().catch(() => undefined)));
    await server?.[Symbol.asyncDispose]();
    await rm(dir, { recursive: true, force: true });
  });
}
