import { randomBytes } from 'node:crypto';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { expect } from 'vitest';
import { SecretsError } from '../errors.js';
import { SecretReader } from '../secret-reader.js';
import { SecretWriter } from '../secret-writer.js';

/** The SecretsError a call rejects with (fails the test when it resolves or throws anything else). */
export async function rejection(promise: Promise<unknown>): Promise<SecretsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    return error as SecretsError;
  }
  throw new Error('expected a SecretsError');
}

/** A bucket as a full-access client sees it: for tests that tamper with it or look inside. */
export function rawBucket(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(jetstream(nc)).open(bucket);
}

/** Every stored message of a bucket's stream, subjects and bodies, raw. */
export async function storedBytes(nc: NatsConnection, bucket: string): Promise<Buffer> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(`KV_${bucket}`);
  const chunks: Buffer[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
    const message = await jsm.streams.getMessage(`KV_${bucket}`, { seq }).catch(() => null);
    if (message) chunks.push(Buffer.from(message.subject), Buffer.from(message.data));
  }
  return Buffer.concat(chunks);
}

/** The keys a bucket holds now (deleted and purged ones left out). */
export async function keysOf(kv: KV, filter = '>'): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await kv.keys(filter)) keys.push(key);
  return keys.sort();
}

/** A nats-server with a secrets writer and reader on one key, and both buckets as a full-access client sees them. */
export type SecretsPair = AsyncDisposable & {
  readonly server: NatsTestServer;
  readonly nc: NatsConnection;
  readonly key: Buffer;
  readonly writer: SecretWriter;
  readonly reader: SecretReader;
  readonly values: KV;
  readonly names: KV;
};

/**
 * Opens the pair on fresh buckets, in this order: the reader may create the values' bucket first
 * (a tool runner may start before any gateway), or the writer may create both.
 */
export async function openSecretsPair(first: 'reader' | 'writer'): Promise<SecretsPair> {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  const key = randomBytes(32);
  const bucket = uniqueName('secrets');
  const namesBucket = uniqueName('secret_names');
  const openReader = (): Promise<SecretReader> => SecretReader.open(nc, { key, bucket });
  const openWriter = (): Promise<SecretWriter> => SecretWriter.open(nc, { key, bucket, namesBucket });
  const reader = first === 'reader' ? await openReader() : undefined;
  const writer = await openWriter();
  const pair = {
    server,
    nc,
    key,
    writer,
    reader: reader ?? (await openReader()),
    values: await rawBucket(nc, bucket),
    names: await rawBucket(nc, namesBucket),
  };
  return {
    ...pair,
    async [Symbol.asyncDispose]() {
      await pair.values.destroy().catch(() => undefined);
      await pair.names.destroy().catch(() => undefined);
      await nc.close();
      await server[Symbol.asyncDispose]();
    },
  };
}
