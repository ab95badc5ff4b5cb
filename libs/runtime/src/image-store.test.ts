import { createHash, randomBytes } from 'node:crypto';
import { MAX_IMAGE_BYTES } from '@flotilla/events';
import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_CHUNK_BYTES, ImageError, ImageStore } from './image-store.js';

let server: NatsTestServer;
let nc: NatsConnection;
let store: ImageStore;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
  store = await ImageStore.open(nc, { bucket: uniqueName('images') });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

/** A png of `size` bytes: its signature, then random bytes (the store reads the format from the signature). */
function png(size: number): Uint8Array {
  const bytes = randomBytes(size);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return bytes;
}

describe('ImageStore', () => {
  it('keeps an image of several chunks and gives back the same bytes, named by their sha256', async () => {
    const bytes = png(IMAGE_CHUNK_BYTES * 3 + 17);
    const stored = await store.put('acme', bytes, { name: 'screen.png', claimed: 'image/png' });
    expect(stored).toEqual({
      sha256: createHash('sha256').update(bytes).digest('hex'),
      bytes: bytes.length,
      media_type: 'image/png',
      name: 'screen.png',
    });
    expect(Buffer.from((await store.get('acme', stored))!).equals(bytes)).toBe(true);
    // the keys: the tenant, the digest, the chunk
    expect((await store.kv.get(`acme.${stored.sha256}.3`))?.value.length).toBe(17);
  });

  it('never gives one tenant’s image to another, nor bytes that are not the image named', async () => {
    const stored = await store.put('acme', png(1_000));
    expect(await store.get('globex', stored)).toBeUndefined();
    expect(await store.get('acme', { ...stored, bytes: stored.bytes + 1 })).toBeUndefined();
    expect(await store.get('acme', { ...stored, sha256: 'f'.repeat(64) })).toBeUndefined();
    // a chunk altered in the bucket: the digest no longer matches
    await store.kv.put(`acme.${stored.sha256}.0`, png(1_000));
    expect(await store.get('acme', stored)).toBeUndefined();
  });

  it('misses an image with a chunk gone (partly written or removed), and storing it again mends it', async () => {
    const bytes = png(IMAGE_CHUNK_BYTES + 5);
    const stored = await store.put('acme', bytes);
    await store.kv.delete(`acme.${stored.sha256}.1`);
    expect(await store.get('acme', stored)).toBeUndefined();
    expect(await store.put('acme', bytes)).toEqual(stored);
    expect(Buffer.from((await store.get('acme', stored))!).equals(bytes)).toBe(true);
  });

  it('refuses what is not a png, jpeg, gif or webp image, a media type the bytes contradict, and too many bytes', async () => {
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => 'stored',
        (error: unknown) => (error instanceof ImageError ? error.code : String(error)),
      );
    expect(
      await refusal(store.put('acme', new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"/>'))),
    ).toBe('not_an_image');
    expect(await refusal(store.put('acme', png(100), { claimed: 'image/jpeg' }))).toBe('media_type_mismatch');
    expect(await refusal(store.put('acme', png(MAX_IMAGE_BYTES + 1)))).toBe('image_too_large');
    expect(await store.get('acme', { sha256: 'a'.repeat(64), bytes: MAX_IMAGE_BYTES + 1 })).toBeUndefined();
  });
});
