import { randomBytes } from 'node:crypto';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretsError } from './errors.js';
import { SecretStore } from './secret-store.js';

let server: NatsTestServer;
let nc: NatsConnection;
let store: SecretStore;
let bucket: string;
const key = randomBytes(32);

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  bucket = uniqueName('secrets');
  store = await SecretStore.open(nc, { key, bucket });
});
afterAll(async () => {
  await store?.kv.destroy().catch(() => undefined);
  await nc?.close();
  await server?.[Symbol.asyncDispose]();
});

const tenant = (): string => uniqueName('t');
const VALUE = 'ghp_RoundTrip0123456789abcdef';

async function rejection(promise: Promise<unknown>): Promise<SecretsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    return error as SecretsError;
  }
  throw new Error('expected a SecretsError');
}

/** Every stored message of the bucket's stream, raw. */
async function storedBytes(): Promise<Buffer> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(`KV_${bucket}`);
  const chunks: Buffer[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
    const message = await jsm.streams.getMessage(`KV_${bucket}`, { seq }).catch(() => null);
    if (message) chunks.push(Buffer.from(message.subject), Buffer.from(message.data));
  }
  return Buffer.concat(chunks);
}

describe('SecretStore', () => {
  it('creates its bucket with history 1, and opening it again is a no-op', async () => {
    const status = await store.kv.status();
    expect(status.history).toBe(1);
    expect(status.replicas).toBe(1);
    const again = await SecretStore.open(nc, { key, bucket });
    const scope = { tenant: tenant(), conversation: 'c1' };
    await store.set(scope, 'API_TOKEN', VALUE);
    expect(await again.reveal({ tenant: scope.tenant, conversation: 'c1' })).toEqual({ API_TOKEN: VALUE });
  });

  it('round-trips values, replaces them, and stores no value in clear', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    await store.set(scope, 'GITHUB_TOKEN', VALUE);
    await store.set(scope, 'PEM', '-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n');
    await store.set(scope, 'UNICODE', 'päss wörd 🔑');
    expect(await store.reveal({ tenant: scope.tenant, conversation: 'c1' })).toEqual({
      GITHUB_TOKEN: VALUE,
      PEM: '-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n',
      UNICODE: 'päss wörd 🔑',
    });
    await store.set(scope, 'GITHUB_TOKEN', 'ghp_Replaced000000000');
    expect((await store.reveal({ tenant: scope.tenant, conversation: 'c1' }))['GITHUB_TOKEN']).toBe('ghp_Replaced000000000');
    const stored = await storedBytes();
    for (const clear of [VALUE, 'ghp_Replaced', 'BEGIN KEY', 'päss', 'wörd']) expect(stored.includes(Buffer.from(clear)), clear).toBe(false);
    expect(stored.includes(Buffer.from(`${scope.tenant}.conversation.c1.GITHUB_TOKEN`))).toBe(true);
  });

  it('overlays the tenant defaults with the conversation its own, and keeps conversations and tenants apart', async () => {
    const acme = tenant();
    await store.set({ tenant: acme }, 'SHARED', 'default-shared');
    await store.set({ tenant: acme }, 'ONLY_DEFAULT', 'default-only');
    await store.set({ tenant: acme, conversation: 'c1' }, 'SHARED', 'c1-shared');
    await store.set({ tenant: acme, conversation: 'c1' }, 'ONLY_C1', 'c1-only');
    await store.set({ tenant: acme, conversation: 'c2' }, 'ONLY_C2', 'c2-only');
    const globex = tenant();
    await store.set({ tenant: globex }, 'SHARED', 'globex-default');
    expect(await store.reveal({ tenant: acme, conversation: 'c1' })).toEqual({ ONLY_C1: 'c1-only', ONLY_DEFAULT: 'default-only', SHARED: 'c1-shared' });
    expect(Object.keys(await store.reveal({ tenant: acme, conversation: 'c1' }))).toEqual(['ONLY_C1', 'ONLY_DEFAULT', 'SHARED']);
    expect(await store.reveal({ tenant: acme, conversation: 'c2' })).toEqual({ ONLY_C2: 'c2-only', ONLY_DEFAULT: 'default-only', SHARED: 'default-shared' });
    expect(await store.reveal({ tenant: acme, conversation: 'c3' })).toEqual({ ONLY_DEFAULT: 'default-only', SHARED: 'default-shared' });
    expect(await store.reveal({ tenant: globex, conversation: 'c1' })).toEqual({ SHARED: 'globex-default' });
    expect(await store.reveal({ tenant: tenant(), conversation: 'c1' })).toEqual({});
  });

  it('lists names only, sorted, per scope; a conversation named like the defaults stays its own', async () => {
    const acme = tenant();
    await store.set({ tenant: acme, conversation: 'c1' }, 'ZED_TOKEN', 'value-of-zed');
    await store.set({ tenant: acme, conversation: 'c1' }, 'ALPHA_TOKEN', 'value-of-alpha');
    await store.set({ tenant: acme }, 'DEFAULT_TOKEN', 'value-of-default');
    await store.set({ tenant: acme, conversation: 'defaults' }, 'TRICKY', 'value-of-tricky');
    const names = await store.names({ tenant: acme, conversation: 'c1' });
    expect(names).toEqual(['ALPHA_TOKEN', 'ZED_TOKEN']);
    expect(JSON.stringify(names)).not.toMatch(/value-of/);
    expect(await store.names({ tenant: acme })).toEqual(['DEFAULT_TOKEN']);
    expect(await store.names({ tenant: acme, conversation: 'defaults' })).toEqual(['TRICKY']);
    expect(await store.names({ tenant: acme, conversation: 'c9' })).toEqual([]);
  });

  it('removes one secret (false when there was none) and every secret of a scope', async () => {
    const acme = tenant();
    const c1 = { tenant: acme, conversation: 'c1' };
    await store.set(c1, 'ONE', 'value-one');
    await store.set(c1, 'TWO', 'value-two');
    await store.set({ tenant: acme, conversation: 'c2' }, 'OTHER', 'value-other');
    await store.set({ tenant: acme }, 'DEFAULT', 'value-default');
    expect(await store.remove(c1, 'ONE')).toBe(true);
    expect(await store.remove(c1, 'ONE')).toBe(false);
    expect(await store.remove(c1, 'NEVER')).toBe(false);
    expect(await store.names(c1)).toEqual(['TWO']);
    await store.set(c1, 'ONE', 'value-one-again');
    expect(await store.reveal(c1)).toEqual({ DEFAULT: 'value-default', ONE: 'value-one-again', TWO: 'value-two' });

    await store.removeAll(c1);
    expect(await store.names(c1)).toEqual([]);
    expect(await store.reveal(c1)).toEqual({ DEFAULT: 'value-default' });
    expect(await store.names({ tenant: acme, conversation: 'c2' })).toEqual(['OTHER']);
    await store.removeAll(c1); // nothing left: a no-op
    await store.removeAll({ tenant: acme });
    expect(await store.reveal({ tenant: acme, conversation: 'c2' })).toEqual({ OTHER: 'value-other' });
  });

  it('reports a value moved to another key, a tampered one and another key as corrupt, never returning garbage', async () => {
    const acme = tenant();
    await store.set({ tenant: acme, conversation: 'c1' }, 'MOVED', 'value-that-moves');
    const entry = await store.kv.get(`${acme}.conversation.c1.MOVED`);
    await store.kv.put(`${acme}.conversation.c2.MOVED`, entry!.value);
    const moved = await rejection(store.reveal({ tenant: acme, conversation: 'c2' }));
    expect(moved).toMatchObject({ code: 'corrupt', isRetryable: false });
    expect(moved.message).toContain(`${acme}.conversation.c2.MOVED`);
    expect(moved.message).not.toContain('value-that-moves');

    const tampered = Buffer.from(entry!.value);
    tampered[tampered.length - 3]! ^= 0xff;
    await store.kv.put(`${acme}.conversation.c3.TAMPERED`, tampered);
    expect((await rejection(store.reveal({ tenant: acme, conversation: 'c3' }))).code).toBe('corrupt');

    const otherKey = await SecretStore.open(nc, { key: randomBytes(32), bucket });
    const wrong = await rejection(otherKey.reveal({ tenant: acme, conversation: 'c1' }));
    expect(wrong.code).toBe('corrupt');
    expect(wrong.message).toMatch(/another key/);
    // the names do not need the key
    expect(await otherKey.names({ tenant: acme, conversation: 'c1' })).toEqual(['MOVED']);
  });

  it('refuses bad names, short values and bad scopes before touching NATS', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    expect((await rejection(store.set(scope, 'lower', VALUE))).code).toBe('invalid_name');
    expect((await rejection(store.set(scope, 'PATH', VALUE))).code).toBe('invalid_name');
    expect((await rejection(store.set(scope, 'FLOTILLA_X', VALUE))).code).toBe('invalid_name');
    const short = await rejection(store.set(scope, 'SHORT', 'abc'));
    expect(short).toMatchObject({ code: 'invalid_value', message: expect.stringMatching(/at least 4 characters/) });
    expect((await rejection(store.set({ tenant: 'a.b' }, 'OK_NAME', VALUE))).code).toBe('invalid_scope');
    expect((await rejection(store.names({ tenant: 'acme', conversation: 'x>' }))).code).toBe('invalid_scope');
    expect((await rejection(store.remove(scope, 'bad name'))).code).toBe('invalid_name');
    expect(await store.names(scope)).toEqual([]);
    await expect(SecretStore.open(nc, { key: randomBytes(16), bucket })).rejects.toMatchObject({ code: 'invalid_key' });
  });

  it('fails with a retryable error when NATS is gone', async () => {
    const gone = await connect({ servers: server.url });
    const lost = await SecretStore.open(gone, { key, bucket });
    await gone.close();
    for (const attempt of [lost.names({ tenant: 'acme', conversation: 'c1' }), lost.set({ tenant: 'acme' }, 'SOME_TOKEN', VALUE), lost.reveal({ tenant: 'acme', conversation: 'c1' })]) {
      const error = await rejection(attempt);
      expect(error).toMatchObject({ code: 'unavailable', isRetryable: true });
      expect(error.message).not.toContain(VALUE);
    }
  });
});

describe('a followed store (the tool runner’s)', () => {
  it('reveals from memory what a writer set, replaced and removed, with the same overlay', async () => {
    const acme = tenant();
    await store.set({ tenant: acme }, 'SHARED', 'default-shared');
    await store.set({ tenant: acme, conversation: 'c1' }, 'OWN', 'c1-own-value');
    const reader = await SecretStore.open(nc, { key, bucket });
    await reader.follow();
    try {
      const ref = { tenant: acme, conversation: 'c1' };
      expect(await reader.reveal(ref)).toEqual({ OWN: 'c1-own-value', SHARED: 'default-shared' });
      await store.set({ tenant: acme, conversation: 'c1' }, 'SHARED', 'c1-shared-value');
      await store.remove({ tenant: acme, conversation: 'c1' }, 'OWN');
      await expect.poll(() => reader.reveal(ref), { timeout: 5_000 }).toEqual({ SHARED: 'c1-shared-value' });
      // another conversation's secrets are not the tenant's defaults
      expect(await reader.reveal({ tenant: acme, conversation: 'c2' })).toEqual({ SHARED: 'default-shared' });
    } finally {
      reader.close();
    }
  });
});
