import { randomBytes } from 'node:crypto';
import { uniqueName } from '@flotilla/testing';
import { connect, Empty, headers, type MsgHdrs } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { SecretWriter } from './secret-writer.js';
import { keysOf, openSecretsPair, rejection, storedBytes } from './test-support/secrets-fixture.js';

const pair = await openSecretsPair('writer');
afterAll(() => pair[Symbol.asyncDispose]());
const { server, nc, key, writer, reader, values, names } = pair;

const tenant = (): string => uniqueName('t');
const VALUE = 'ghp_RoundTrip0123456789abcdef';

describe('SecretWriter', () => {
  it('creates both buckets with history 1, the names one without direct gets, and opening again is a no-op', async () => {
    for (const kv of [values, names]) {
      const status = await kv.status();
      expect(status.history).toBe(1);
      expect(status.replicas).toBe(1);
    }
    expect((await names.status()).streamInfo.config.allow_direct).toBe(false);
    const again = await SecretWriter.open(nc, { key, bucket: writer.bucket, namesBucket: writer.namesBucket });
    const scope = { tenant: tenant(), conversation: 'c1' };
    await again.set(scope, 'API_TOKEN', VALUE);
    expect(await writer.names(scope)).toEqual(['API_TOKEN']);
    expect(await reader.reveal({ tenant: scope.tenant, conversation: 'c1' })).toEqual({ API_TOKEN: VALUE });
  });

  it('stores each name in the names bucket with only its time, and no value in clear anywhere', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    await writer.set(scope, 'GITHUB_TOKEN', VALUE);
    await writer.set(scope, 'UNICODE', 'päss wörd 🔑');
    await writer.set(scope, 'GITHUB_TOKEN', 'ghp_Replaced000000000');
    const entry = await names.get(`${scope.tenant}.conversation.c1.GITHUB_TOKEN`);
    const record = entry!.json<Record<string, unknown>>();
    expect(Object.keys(record)).toEqual(['updated_at']);
    expect(new Date(record['updated_at'] as string).toISOString()).toBe(record['updated_at']);
    const ciphertext = Buffer.from((await values.get(`${scope.tenant}.conversation.c1.GITHUB_TOKEN`))!.value);
    const namesStored = await storedBytes(nc, writer.namesBucket);
    expect(namesStored.includes(ciphertext.subarray(9, 25)), 'the names bucket holds a ciphertext').toBe(false);
    for (const stored of [namesStored, await storedBytes(nc, writer.bucket)]) {
      for (const clear of [VALUE, 'ghp_Replaced', 'päss', 'wörd'])
        expect(stored.includes(Buffer.from(clear)), clear).toBe(false);
      expect(stored.includes(Buffer.from(`${scope.tenant}.conversation.c1.GITHUB_TOKEN`))).toBe(true);
    }
  });

  it('lists names only, sorted, per scope; a conversation named like the defaults stays its own', async () => {
    const acme = tenant();
    await writer.set({ tenant: acme, conversation: 'c1' }, 'ZED_TOKEN', 'value-of-zed');
    await writer.set({ tenant: acme, conversation: 'c1' }, 'ALPHA_TOKEN', 'value-of-alpha');
    await writer.set({ tenant: acme }, 'DEFAULT_TOKEN', 'value-of-default');
    await writer.set({ tenant: acme, conversation: 'defaults' }, 'TRICKY', 'value-of-tricky');
    const listed = await writer.names({ tenant: acme, conversation: 'c1' });
    expect(listed).toEqual(['ALPHA_TOKEN', 'ZED_TOKEN']);
    expect(JSON.stringify(listed)).not.toMatch(/value-of/);
    expect(await writer.names({ tenant: acme })).toEqual(['DEFAULT_TOKEN']);
    expect(await writer.names({ tenant: acme, conversation: 'defaults' })).toEqual(['TRICKY']);
    expect(await writer.names({ tenant: acme, conversation: 'c9' })).toEqual([]);
    // the names do not need the key
    expect(
      await (
        await SecretWriter.open(nc, { key: randomBytes(32), bucket: writer.bucket, namesBucket: writer.namesBucket })
      ).names({ tenant: acme, conversation: 'c1' }),
    ).toEqual(['ALPHA_TOKEN', 'ZED_TOKEN']);
  });

  it('removes one secret, value and name (false when there was none), and every secret of a scope', async () => {
    const acme = tenant();
    const c1 = { tenant: acme, conversation: 'c1' };
    await writer.set(c1, 'ONE', 'value-one');
    await writer.set(c1, 'TWO', 'value-two');
    await writer.set({ tenant: acme, conversation: 'c2' }, 'OTHER', 'value-other');
    await writer.set({ tenant: acme }, 'DEFAULT', 'value-default');
    expect(await writer.remove(c1, 'ONE')).toBe(true);
    expect(await keysOf(values, `${acme}.conversation.c1.*`)).toEqual([`${acme}.conversation.c1.TWO`]);
    expect(await keysOf(names, `${acme}.conversation.c1.*`)).toEqual([`${acme}.conversation.c1.TWO`]);
    expect(await writer.remove(c1, 'ONE')).toBe(false);
    expect(await writer.remove(c1, 'NEVER')).toBe(false);
    expect(await writer.names(c1)).toEqual(['TWO']);
    await writer.set(c1, 'ONE', 'value-one-again');
    expect(await reader.reveal(c1)).toEqual({ DEFAULT: 'value-default', ONE: 'value-one-again', TWO: 'value-two' });

    await writer.removeAll(c1);
    expect(await writer.names(c1)).toEqual([]);
    expect(await keysOf(values, `${acme}.conversation.c1.*`)).toEqual([]);
    expect(await reader.reveal(c1)).toEqual({ DEFAULT: 'value-default' });
    expect(await writer.names({ tenant: acme, conversation: 'c2' })).toEqual(['OTHER']);
    await writer.removeAll(c1); // nothing left: a no-op
    await writer.removeAll({ tenant: acme });
    expect(await reader.reveal({ tenant: acme, conversation: 'c2' })).toEqual({ OTHER: 'value-other' });
  });

  it('refuses bad names, short values and bad scopes before touching NATS', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    expect((await rejection(writer.set(scope, 'lower', VALUE))).code).toBe('invalid_name');
    expect((await rejection(writer.set(scope, 'PATH', VALUE))).code).toBe('invalid_name');
    expect((await rejection(writer.set(scope, 'FLOTILLA_X', VALUE))).code).toBe('invalid_name');
    const short = await rejection(writer.set(scope, 'SHORT', 'abc'));
    expect(short).toMatchObject({ code: 'invalid_value', message: expect.stringMatching(/at least 4 characters/) });
    expect((await rejection(writer.set({ tenant: 'a.b' }, 'OK_NAME', VALUE))).code).toBe('invalid_scope');
    expect((await rejection(writer.names({ tenant: 'acme', conversation: 'x>' }))).code).toBe('invalid_scope');
    expect((await rejection(writer.remove(scope, 'bad name'))).code).toBe('invalid_name');
    expect(await writer.names(scope)).toEqual([]);
    expect(await keysOf(names, `${scope.tenant}.>`)).toEqual([]);
    await expect(SecretWriter.open(nc, { key: randomBytes(16), bucket: writer.bucket })).rejects.toMatchObject({
      code: 'invalid_key',
    });
  });

  it('fails with a retryable error when NATS is gone', async () => {
    const gone = await connect({ servers: server.url });
    const lost = await SecretWriter.open(gone, { key, bucket: writer.bucket, namesBucket: writer.namesBucket });
    await gone.close();
    for (const attempt of [
      lost.names({ tenant: 'acme', conversation: 'c1' }),
      lost.set({ tenant: 'acme' }, 'SOME_TOKEN', VALUE),
      lost.remove({ tenant: 'acme' }, 'SOME_TOKEN'),
    ]) {
      const error = await rejection(attempt);
      expect(error).toMatchObject({ code: 'unavailable', isRetryable: true });
      expect(error.message).not.toContain(VALUE);
    }
  });
});

describe('what a crash between the two writes leaves', () => {
  it('the writes come in an order where a crash leaves a name without a value, never the reverse', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    const writes: string[] = [];
    const record = (bucket: string) => (_error: unknown, message: { headers?: MsgHdrs }) =>
      void writes.push(`${bucket} ${message.headers?.get('KV-Operation') || 'PUT'}`);
    const subscriptions = [
      nc.subscribe(`$KV.${writer.namesBucket}.${scope.tenant}.>`, { callback: record('name') }),
      nc.subscribe(`$KV.${writer.bucket}.${scope.tenant}.>`, { callback: record('value') }),
    ];
    await nc.flush();
    await writer.set(scope, 'ORDERED', VALUE);
    await writer.remove(scope, 'ORDERED');
    await writer.set(scope, 'ORDERED', VALUE);
    await writer.removeAll(scope);
    await nc.flush();
    for (const subscription of subscriptions) subscription.unsubscribe();
    const set = ['name PUT', 'value PUT'];
    const remove = ['value PURGE', 'name PURGE', 'value PURGE'];
    expect(writes).toEqual([...set, ...remove, ...set, ...remove]);
  });

  it('a name without a value (a set that stopped after the name, a remove after the value) is listed, revealed as nothing, and mended', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    await names.put(
      `${scope.tenant}.conversation.c1.HALF_SET`,
      JSON.stringify({ updated_at: new Date().toISOString() }),
    );
    await writer.set(scope, 'HALF_REMOVED', VALUE);
    await values.purge(`${scope.tenant}.conversation.c1.HALF_REMOVED`);
    expect(await writer.names(scope)).toEqual(['HALF_REMOVED', 'HALF_SET']);
    expect(await reader.reveal(scope)).toEqual({});
    await writer.set(scope, 'HALF_SET', VALUE);
    expect(await reader.reveal(scope)).toEqual({ HALF_SET: VALUE });
    expect(await writer.remove(scope, 'HALF_REMOVED')).toBe(true);
    expect(await writer.names(scope)).toEqual(['HALF_SET']);
  });

  it('a value without its name is not listed, and removing that name by hand purges it all the same', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    await writer.set(scope, 'ORPHAN', VALUE);
    await names.purge(`${scope.tenant}.conversation.c1.ORPHAN`);
    expect(await writer.names(scope)).toEqual([]);
    await writer.removeAll(scope); // cannot see it: the writer does not read the values
    expect(await reader.reveal(scope)).toEqual({ ORPHAN: VALUE });
    expect(await writer.remove(scope, 'ORPHAN')).toBe(false);
    expect(await reader.reveal(scope)).toEqual({});
  });
});

describe('concurrent sets and removes of the same names', () => {
  /**
   * Runs `interfere` when the writer (on `nc`) publishes a message to `subject` matching `when`,
   * from that message's delivery on the same connection: its publish leaves before the writer's
   * next write, which waits for the acknowledgement that follows the delivery.
   */
  async function interfereOn(
    subject: string,
    when: (operation: string | undefined) => boolean,
    interfere: () => void,
  ): Promise<void> {
    const subscription = nc.subscribe(subject, {
      callback: (_error, message) => {
        if (!when(message.headers?.get('KV-Operation') || undefined)) return;
        subscription.unsubscribe();
        interfere();
      },
    });
    await nc.flush();
  }
  const purgeHeaders = (): MsgHdrs => {
    const purge = headers();
    purge.set('KV-Operation', 'PURGE');
    purge.set('Nats-Rollup', 'sub');
    return purge;
  };
  const keyOf = (scope: { tenant: string; conversation: string }, name: string): string =>
    `${scope.tenant}.conversation.${scope.conversation}.${name}`;

  it('a set whose name a remove took before its value landed takes its value back out', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    const key = keyOf(scope, 'RACED');
    await interfereOn(
      `$KV.${writer.namesBucket}.${key}`,
      (operation) => operation === undefined,
      () => nc.publish(`$KV.${writer.namesBucket}.${key}`, Empty, { headers: purgeHeaders() }),
    );
    await writer.set(scope, 'RACED', VALUE);
    expect(await keysOf(names, `${scope.tenant}.>`)).toEqual([]);
    expect(await keysOf(values, `${scope.tenant}.>`)).toEqual([]);
  });

  it('a remove leaves the name a set wrote after it looked', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    const key = keyOf(scope, 'RACED');
    await writer.set(scope, 'RACED', VALUE);
    await interfereOn(
      `$KV.${writer.bucket}.${key}`,
      (operation) => operation === 'PURGE',
      () => nc.publish(`$KV.${writer.namesBucket}.${key}`, JSON.stringify({ updated_at: new Date().toISOString() })),
    );
    expect(await writer.remove(scope, 'RACED')).toBe(true);
    expect(await writer.names(scope)).toEqual(['RACED']);
  });

  it('a remove purges again a value that landed between its purge of the value and of the name', async () => {
    const scope = { tenant: tenant(), conversation: 'c1' };
    const key = keyOf(scope, 'RACED');
    await writer.set(scope, 'RACED', VALUE);
    await interfereOn(
      `$KV.${writer.namesBucket}.${key}`,
      (operation) => operation === 'PURGE',
      () => nc.publish(`$KV.${writer.bucket}.${key}`, randomBytes(64)),
    );
    expect(await writer.remove(scope, 'RACED')).toBe(true);
    expect(await keysOf(names, `${scope.tenant}.>`)).toEqual([]);
    expect(await keysOf(values, `${scope.tenant}.>`)).toEqual([]);
  });

  it('never leave a value without its name (two gateways, one setting while the other removes)', async () => {
    const connections = await Promise.all([connect({ servers: server.url }), connect({ servers: server.url })]);
    try {
      const [setter, remover] = await Promise.all(
        connections.map((connection) =>
          SecretWriter.open(connection, { key, bucket: writer.bucket, namesBucket: writer.namesBucket }),
        ),
      );
      const acme = tenant();
      const after = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(
          Array.from({ length: 16 }, (_, index) => ({ tenant: acme, conversation: `c${index}` })).flatMap(
            (scope, index) => [
              after(index % 3).then(() => setter!.set(scope, 'RACED', `${VALUE}-${round}`)),
              after((index + round) % 4).then(() => remover!.remove(scope, 'RACED')),
            ],
          ),
        );
        const named = new Set(await keysOf(names, `${acme}.>`));
        for (const valued of await keysOf(values, `${acme}.>`))
          expect(named.has(valued), `round ${round}: ${valued} has a value but no name`).toBe(true);
      }
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }
  });
});
