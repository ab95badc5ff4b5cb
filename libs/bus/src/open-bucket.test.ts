import { NatsServerProcess } from '@flotilla/nats-embedded';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { isTransientNatsError, whileUnavailable } from './availability.js';
import { BucketError, openBucket } from './open-bucket.js';

// Against real nats-servers: what start-up waits out, and what it does not.

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function serve(jetstream = true): Promise<NatsServerProcess> {
  const server = await NatsServerProcess.start({ jetstream });
  cleanups.push(() => server.stop());
  return server;
}

async function client(server: NatsServerProcess): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  cleanups.push(() => nc.close());
  return nc;
}

describe('whileUnavailable', () => {
  it('waits out "no responders" until a responder appears, then returns its answer', async () => {
    const nc = await client(await serve(false));
    const retries: number[] = [];
    setTimeout(
      () => nc.subscribe('late.service', { callback: (_error, message) => void message.respond('here') }),
      700,
    );
    const answer = await whileUnavailable(
      async () => (await nc.request('late.service', '', { timeout: 500 })).string(),
      { onRetry: (_error, attempt) => retries.push(attempt) },
    );
    expect(answer).toBe('here');
    expect(retries.length).toBeGreaterThan(1);
  });

  it('throws at once what retrying cannot fix, and the last transient failure at its deadline', async () => {
    let calls = 0;
    await expect(
      whileUnavailable(async () => {
        calls += 1;
        throw new Error('bad request');
      }),
    ).rejects.toThrow('bad request');
    expect(calls).toBe(1);

    const nc = await client(await serve(false));
    const started = Date.now();
    const failure = await whileUnavailable(() => nc.request('nobody.home', '', { timeout: 200 }), {
      deadlineMs: 800,
    }).catch((error: unknown) => error);
    expect(isTransientNatsError(failure)).toBe(true);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe('openBucket', () => {
  it('opens a bucket through a restart of its server: the calls made while it is down are waited out', async () => {
    const server = await serve();
    const nc = await client(server);
    await server.kill();
    setTimeout(() => void server.restart(), 1_500);
    const kv = await openBucket(nc, 'through_restart', { history: 1 }, { timeoutMs: 500 });
    await kv.put('k', 'v');
    expect((await kv.get('k'))?.string()).toBe('v');
  });

  it('creates one bucket when many instances open it at once, each with its settings', async () => {
    const server = await serve();
    const connections = await Promise.all(Array.from({ length: 6 }, () => client(server)));
    const buckets = await Promise.all(
      connections.map((nc) => openBucket(nc, 'shared', { history: 1, description: 'shared by all' })),
    );
    await buckets[0]!.put('key', 'one');
    for (const kv of buckets) expect((await kv.get('key'))?.string()).toBe('one');
    expect((await buckets[5]!.status()).description).toBe('shared by all');
  });

  it('refuses at once, saying so, on a server without JetStream', async () => {
    const nc = await client(await serve(false));
    const started = Date.now();
    const error = await openBucket(nc, 'nowhere', { history: 1 }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(BucketError);
    expect((error as BucketError).code).toBe('jetstream_unavailable');
    expect((error as Error).message).toMatch(/does not have JetStream enabled.*nowhere/);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
