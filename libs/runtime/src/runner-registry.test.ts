import { startNats, uniqueName, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerRegistry } from './runner-registry.js';

let server: NatsTestServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNats();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc.close();
  await server[Symbol.asyncDispose]();
});

/** Two registries on the same buckets: `runner` heartbeats and retires through one, `asker` asks through the other. */
async function registries(livenessMs: number): Promise<{ runner: RunnerRegistry; asker: RunnerRegistry }> {
  const options = { runnersBucket: uniqueName('runners'), workspacesBucket: uniqueName('workspaces'), livenessMs };
  return { runner: await RunnerRegistry.open(nc, options), asker: await RunnerRegistry.open(nc, options) };
}

describe('runner liveness', () => {
  it('is read now by isAlive: a retired runner is dead at once', async () => {
    const { runner, asker } = await registries(5_000);
    expect(await asker.isAlive('runner-a')).toBe(false);
    await runner.heartbeat('runner-a');
    expect(await asker.isAlive('runner-a')).toBe(true);
    await runner.retire('runner-a');
    expect(await asker.isAlive('runner-a')).toBe(false);
  });

  it('is remembered by aliveUntil until the heartbeat it read says no more, then read again; forget reads it at once', async () => {
    const livenessMs = 1_500;
    const { runner, asker } = await registries(livenessMs);
    expect(await asker.aliveUntil('runner-a')).toBeUndefined();
    const before = Date.now();
    await runner.heartbeat('runner-a');
    const until = await asker.aliveUntil('runner-a');
    expect(until).toBeGreaterThanOrEqual(before + livenessMs);
    expect(until).toBeLessThanOrEqual(Date.now() + livenessMs);

    // retired behind its back: the remembered heartbeat still answers (no read), until forgotten
    await runner.retire('runner-a');
    expect(await asker.aliveUntil('runner-a')).toBe(until);
    asker.forget('runner-a');
    expect(await asker.aliveUntil('runner-a')).toBeUndefined();

    // a runner that stops heartbeating is dead once its last heartbeat is a window old, and a newer heartbeat is found by the read after
    await runner.heartbeat('runner-b');
    const first = await asker.aliveUntil('runner-b');
    await new Promise((resolve) => setTimeout(resolve, livenessMs + 100));
    expect(await asker.aliveUntil('runner-b')).toBeUndefined();
    await runner.heartbeat('runner-b');
    expect(await asker.aliveUntil('runner-b')).toBeGreaterThan(first!);
  });
});
