import { startNats, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InterruptRegistry, interruptSubject, publishInterrupt, DEFAULT_SIGNAL_ROOT } from './signals.js';

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

const ref = { tenant: 'acme', conversation: 'c1' };

describe('InterruptRegistry', () => {
  it('an interrupt naming its commit stops the work decided before it, not the work that commit woke', async () => {
    const registry = new InterruptRegistry();
    registry.listen(nc);
    await nc.flush();
    const before = registry.track(ref, undefined, 10);
    const unknown = registry.track(ref);
    const woken = registry.track(ref, undefined, 12);
    const other = registry.track({ tenant: 'acme', conversation: 'c2' }, undefined, 1);
    publishInterrupt(nc, ref, 12);
    await expect.poll(() => before.signal.aborted).toBe(true);
    expect(unknown.signal.aborted).toBe(true);
    expect(woken.signal.aborted).toBe(false);
    expect(other.signal.aborted).toBe(false);
    // one naming no commit (an older process's) stops everything of the conversation
    publishInterrupt(nc, ref);
    await expect.poll(() => woken.signal.aborted).toBe(true);
    expect(other.signal.aborted).toBe(false);
    registry.close();
  });

  it('reads a message that is not an interrupt it knows as one that stops everything', async () => {
    const registry = new InterruptRegistry();
    registry.listen(nc);
    await nc.flush();
    const tracked = [registry.track(ref, undefined, 5), registry.track(ref, undefined, 6)];
    nc.publish(interruptSubject(DEFAULT_SIGNAL_ROOT, ref), '{"at": "soon"');
    await expect.poll(() => tracked.every((work) => work.signal.aborted)).toBe(true);
    const later = registry.track(ref, undefined, 7);
    nc.publish(interruptSubject(DEFAULT_SIGNAL_ROOT, ref), JSON.stringify({ at: -3 }));
    await expect.poll(() => later.signal.aborted).toBe(true);
    expect(registry.interrupt(ref, 100)).toBe(3);
    registry.close();
  });
});
