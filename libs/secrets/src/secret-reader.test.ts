import { randomBytes } from 'node:crypto';
import { uniqueName } from '@flotilla/testing';
import { connect } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { SecretReader } from './secret-reader.js';
import { openSecretsPair, rejection } from './test-support/secrets-fixture.js';

const pair = await openSecretsPair('reader');
afterAll(() => pair[Symbol.asyncDispose]());
const { server, nc, key, writer, reader, values } = pair;

const tenant = (): string => uniqueName('t');
const VALUE = 'ghp_RoundTrip0123456789abcdef';

describe('SecretReader', () => {
  it('creates the values bucket with history 1', async () => {
    const status = await values.status();
    expect(status.history).toBe(1);
    expect(status.replicas).toBe(1);
  });

  it('round-trips values and replaces them', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    await writer.set(scope, 'GITHUB_TOKEN', VALUE);
    await writer.set(scope, 'PEM', '-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n');
    await writer.set(scope, 'UNICODE', 'päss wörd 🔑');
    expect(await reader.reveal({ tenant: scope.tenant, conversation: 'c1' })).toEqual({
      GITHUB_TOKEN: VALUE,
      PEM: '-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n',
      UNICODE: 'päss wörd 🔑',
    });
    await writer.set(scope, 'GITHUB_TOKEN', 'ghp_Replaced000000000');
    expect((await reader.reveal({ tenant: scope.tenant, conversation: 'c1' }))['GITHUB_TOKEN']).toBe(
      'ghp_Replaced000000000',
    );
  });

  it('overlays the tenant defaults with the conversation its own, and keeps conversations and tenants apart', async () => {
    const acme = tenant();
    await writer.set({ tenant: acme }, 'SHARED', 'default-shared');
    await writer.set({ tenant: acme }, 'ONLY_DEFAULT', 'default-only');
    await writer.set({ tenant: acme, conversation: 'c1' }, 'SHARED', 'c1-shared');
    await writer.set({ tenant: acme, conversation: 'c1' }, 'ONLY_C1', 'c1-only');
    await writer.set({ tenant: acme, conversation: 'c2' }, 'ONLY_C2', 'c2-only');
    const globex = tenant();
    await writer.set({ tenant: globex }, 'SHARED', 'globex-default');
    expect(await reader.reveal({ tenant: acme, conversation: 'c1' })).toEqual({
      ONLY_C1: 'c1-only',
      ONLY_DEFAULT: 'default-only',
      SHARED: 'c1-shared',
    });
    expect(Object.keys(await reader.reveal({ tenant: acme, conversation: 'c1' }))).toEqual([
      'ONLY_C1',
      'ONLY_DEFAULT',
      'SHARED',
    ]);
    expect(await reader.reveal({ tenant: acme, conversation: 'c2' })).toEqual({
      ONLY_C2: 'c2-only',
      ONLY_DEFAULT: 'default-only',
      SHARED: 'default-shared',
    });
    expect(await reader.reveal({ tenant: acme, conversation: 'c3' })).toEqual({
      ONLY_DEFAULT: 'default-only',
      SHARED: 'default-shared',
    });
    expect(await reader.reveal({ tenant: globex, conversation: 'c1' })).toEqual({ SHARED: 'globex-default' });
    expect(await reader.reveal({ tenant: tenant(), conversation: 'c1' })).toEqual({});
  });

  it('reports a value moved to another key, a tampered one and another key as corrupt, never returning garbage', async () => {
    const acme = tenant();
    await writer.set({ tenant: acme, conversation: 'c1' }, 'MOVED', 'value-that-moves');
    const entry = await values.get(`${acme}.conversation.c1.MOVED`);
    await values.put(`${acme}.conversation.c2.MOVED`, entry!.value);
    const moved = await rejection(reader.reveal({ tenant: acme, conversation: 'c2' }));
    expect(moved).toMatchObject({ code: 'corrupt', isRetryable: false });
    expect(moved.message).toContain(`${acme}.conversation.c2.MOVED`);
    expect(moved.message).not.toContain('value-that-moves');

    const tampered = Buffer.from(entry!.value);
    tampered[tampered.length - 3]! ^= 0xff;
    await values.put(`${acme}.conversation.c3.TAMPERED`, tampered);
    expect((await rejection(reader.reveal({ tenant: acme, conversation: 'c3' }))).code).toBe('corrupt');

    const otherKey = await SecretReader.open(nc, { key: randomBytes(32), bucket: reader.bucket });
    const wrong = await rejection(otherKey.reveal({ tenant: acme, conversation: 'c1' }));
    expect(wrong.code).toBe('corrupt');
    expect(wrong.message).toMatch(/another key/);
  });

  it('refuses a bad key before touching NATS, and fails with a retryable error when NATS is gone', async () => {
    await expect(SecretReader.open(nc, { key: randomBytes(16), bucket: reader.bucket })).rejects.toMatchObject({
      code: 'invalid_key',
    });
    expect((await rejection(reader.reveal({ tenant: 'acme', conversation: 'x>' }))).code).toBe('invalid_scope');
    const gone = await connect({ servers: server.url });
    const lost = await SecretReader.open(gone, { key, bucket: reader.bucket });
    await gone.close();
    const error = await rejection(lost.reveal({ tenant: 'acme', conversation: 'c1' }));
    expect(error).toMatchObject({ code: 'unavailable', isRetryable: true });
  });
});

describe('a followed reader (the tool runner’s)', () => {
  it('reveals from memory what a writer set, replaced and removed, with the same overlay', async () => {
    const acme = tenant();
    await writer.set({ tenant: acme }, 'SHARED', 'default-shared');
    await writer.set({ tenant: acme, conversation: 'c1' }, 'OWN', 'c1-own-value');
    const followed = await SecretReader.open(nc, { key, bucket: reader.bucket });
    await followed.follow();
    try {
      const ref = { tenant: acme, conversation: 'c1' };
      expect(await followed.reveal(ref)).toEqual({ OWN: 'c1-own-value', SHARED: 'default-shared' });
      await writer.set({ tenant: acme, conversation: 'c1' }, 'SHARED', 'c1-shared-value');
      await writer.remove({ tenant: acme, conversation: 'c1' }, 'OWN');
      await expect.poll(() => followed.reveal(ref), { timeout: 5_000 }).toEqual({ SHARED: 'c1-shared-value' });
      // another conversation's secrets are not the tenant's defaults
      expect(await followed.reveal({ tenant: acme, conversation: 'c2' })).toEqual({ SHARED: 'default-shared' });
    } finally {
      followed.close();
    }
  });
});
