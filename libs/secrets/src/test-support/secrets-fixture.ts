import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { expect } from 'vitest';
import { SecretsError } from '../errors.js';

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
