import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess } from '@flotilla/testing';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SECRET_NAMES_BUCKET, DEFAULT_SECRETS_BUCKET } from './bucket-setup.js';
import { SecretReader } from './secret-reader.js';
import { SecretWriter } from './secret-writer.js';
import { keysOf, rawBucket } from './test-support/secrets-fixture.js';

/** Every way to read the values' stream: what the gateway's credential is denied. */
const STREAM = `KV_${DEFAULT_SECRETS_BUCKET}`;
const READS = [
  `$JS.API.DIRECT.GET.${STREAM}`,
  `$JS.API.DIRECT.GET.${STREAM}.>`,
  `$JS.API.STREAM.MSG.GET.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}`,
  `$JS.API.CONSUMER.CREATE.${STREAM}.>`,
  `$JS.API.CONSUMER.DURABLE.CREATE.${STREAM}.>`,
];
const CONFIG = `
authorization {
  users: [
    {
      user: writer
      password: writer-password
      permissions: {
        publish: { allow: [">"], deny: [${READS.map((subject) => JSON.stringify(subject)).join(', ')}] }
        subscribe: { allow: [">"] }
      }
    }
    { user: reader, password: reader-password }
  ]
}
`;

let directory: string;
let server: NatsServerProcess;
let writerConnection: NatsConnection;
let readerConnection: NatsConnection;
/** The permission errors the server sent the writer's connection. */
const violations: string[] = [];

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'flotilla-secrets-permissions-'));
  const config = join(directory, 'nats.conf');
  await writeFile(config, CONFIG, { mode: 0o600 });
  server = await NatsServerProcess.start({ extraArgs: ['-c', config] });
  writerConnection = await connect({ servers: server.url, user: 'writer', pass: 'writer-password' });
  readerConnection = await connect({ servers: server.url, user: 'reader', pass: 'reader-password' });
  void (async () => {
    for await (const status of writerConnection.status())
      if (status.type === 'error') violations.push(String(status.error));
  })();
});
afterAll(async () => {
  await writerConnection?.close();
  await readerConnection?.close();
  await server?.[Symbol.asyncDispose]();
  if (directory) await rm(directory, { recursive: true, force: true });
});

const KEY = randomBytes(32);
const VALUE = 'ghp_PermissionCheck_0123456789';
const DEFAULT_VALUE = 'npm_PermissionDefault_98765';

describe('a writer whose credential may not read the secrets bucket', () => {
  it('creates both buckets, sets, lists, removes and removes all without one permission error, and the reader reveals what it set', async () => {
    // the writer first: it creates the values' bucket itself, from the stream's info alone
    const writer = await SecretWriter.open(writerConnection, { key: KEY, replicas: 1 });
    expect([writer.bucket, writer.namesBucket]).toEqual([DEFAULT_SECRETS_BUCKET, DEFAULT_SECRET_NAMES_BUCKET]);
    const reader = await SecretReader.open(readerConnection, { key: KEY, replicas: 1 });
    await reader.follow();
    try {
      const c1 = { tenant: 'acme', conversation: 'c1' };
      const c2 = { tenant: 'acme', conversation: 'c2' };
      await writer.set({ tenant: 'acme' }, 'NPM_TOKEN', DEFAULT_VALUE);
      await writer.set(c1, 'GITHUB_TOKEN', VALUE);
      await writer.set(c1, 'GITHUB_TOKEN', `${VALUE}-replaced`);
      await writer.set(c1, 'DOOMED_TOKEN', VALUE);
      await writer.set(c2, 'OTHER_TOKEN', VALUE);
      expect(await writer.names(c1)).toEqual(['DOOMED_TOKEN', 'GITHUB_TOKEN']);
      expect(await writer.names({ tenant: 'acme' })).toEqual(['NPM_TOKEN']);
      expect(await writer.remove(c1, 'DOOMED_TOKEN')).toBe(true);
      expect(await writer.remove(c1, 'DOOMED_TOKEN')).toBe(false);
      expect(await writer.remove(c1, 'NEVER_SET')).toBe(false);
      await writer.removeAll(c2);
      expect(await writer.names(c2)).toEqual([]);

      const expected = { GITHUB_TOKEN: `${VALUE}-replaced`, NPM_TOKEN: DEFAULT_VALUE };
      await expect.poll(() => reader.reveal(c1), { timeout: 5_000 }).toEqual(expected);
      expect(await reader.reveal(c2)).toEqual({ NPM_TOKEN: DEFAULT_VALUE });
      const unfollowed = await SecretReader.open(readerConnection, { key: KEY });
      expect(await unfollowed.reveal(c1)).toEqual(expected);
      expect(await keysOf(await rawBucket(readerConnection, DEFAULT_SECRETS_BUCKET))).toEqual([
        'acme.conversation.c1.GITHUB_TOKEN',
        'acme.defaults.NPM_TOKEN',
      ]);
      await writerConnection.flush();
      expect(violations).toEqual([]);
    } finally {
      reader.close();
    }
  });

  it('is really denied every read of it: a direct get, a message get and a listing fail, and the status stream reports each', async () => {
    const jsm = await jetstreamManager(writerConnection);
    await expect(
      jsm.direct.getMessage(STREAM, { last_by_subj: `$KV.${DEFAULT_SECRETS_BUCKET}.acme.defaults.NPM_TOKEN` }),
    ).rejects.toThrow(/permissions violation/i);
    await expect(
      jsm.streams.getMessage(STREAM, { last_by_subj: `$KV.${DEFAULT_SECRETS_BUCKET}.acme.defaults.NPM_TOKEN` }),
    ).rejects.toThrow(/permissions violation/i);
    const values = await rawBucket(writerConnection, DEFAULT_SECRETS_BUCKET);
    await expect(values.get('acme.defaults.NPM_TOKEN')).rejects.toThrow(/permissions violation/i);
    await expect(keysOf(values)).rejects.toThrow(/permissions violation/i);
    await writerConnection.flush();
    expect(violations.length).toBeGreaterThanOrEqual(4);
    for (const violation of violations)
      expect(violation).toMatch(
        /permissions violation for publish to "\$JS\.API\.(DIRECT\.GET|STREAM\.MSG\.GET|CONSUMER\.CREATE)\.KV_flotilla_secrets\b/i,
      );
    // the names' bucket stays readable: it holds no value
    expect(await keysOf(await rawBucket(writerConnection, DEFAULT_SECRET_NAMES_BUCKET))).toEqual([
      'acme.conversation.c1.GITHUB_TOKEN',
      'acme.defaults.NPM_TOKEN',
    ]);
  });
});
