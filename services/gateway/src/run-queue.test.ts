import { startNats } from '@flotilla/testing';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RunQueue } from './run-queue.js';

describe('run queue', () => {
  it('keeps each tenant’s runs in the order they came across gateways, one entry per conversation; of two gateways claiming a run one wins', async () => {
    await using server = await startNats({ preferExternal: false });
    const [one, two] = await Promise.all([connect({ servers: server.url }), connect({ servers: server.url })]);
    const logger = pino({ level: 'silent' });
    const a = await RunQueue.open(one, logger);
    const b = await RunQueue.open(two, logger);
    await Promise.all([a.start(), b.start()]);
    try {
      const ref = (conversation: string, tenant = 'acme') => ({ tenant, conversation });
      expect(await a.enqueue(ref('c1'))).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 5)); // queued_at has millisecond precision
      expect(await b.enqueue(ref('c2'))).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(await a.enqueue(ref('c3'))).toBe(true);
      expect(await b.enqueue(ref('other', 'globex'))).toBe(true);
      // asking again keeps its place
      expect(await b.enqueue(ref('c1'))).toBe(false);
      // both gateways see the same order (b from its watch)
      await expect.poll(() => b.queued('acme').map((run) => run.conversation)).toEqual(['c1', 'c2', 'c3']);
      expect(a.queued('acme').map((run) => run.conversation)).toEqual(['c1', 'c2', 'c3']);
      await expect.poll(() => a.position(ref('c3'))?.position).toBe(3);
      expect(b.position(ref('other', 'globex'))?.position).toBe(1);
      expect(a.waiting('acme')).toBe(3);

      // two gateways claim the head at once: one wins, and the head keeps its place
      const head = a.queued('acme')[0]!;
      const claims = await Promise.all([
        a.claim('acme', head, 'gateway-a'),
        b.claim('acme', b.queued('acme')[0]!, 'gateway-b'),
      ]);
      expect(claims.filter((claim) => claim !== undefined)).toHaveLength(1);
      await expect.poll(() => b.queued('acme')[0]?.claimed_by).toBeDefined();
      expect(b.position(ref('c1'))?.position).toBe(1);

      // the winner takes it out at its claim's revision; a removal at a stale revision changes nothing
      await a.remove(ref('c2'), 1);
      const winner = claims[0] !== undefined ? a : b;
      await winner.remove(
        ref('c1'),
        claims.find((claim) => claim !== undefined),
      );
      await expect.poll(() => b.queued('acme').map((run) => run.conversation)).toEqual(['c2', 'c3']);
      await expect.poll(() => a.position(ref('c2'))?.position).toBe(1);
      // a plain removal (a pause) from the gateway that did not queue it
      await b.remove(ref('c3'));
      await expect.poll(() => a.position(ref('c3'))).toBeNull();
    } finally {
      a.stop();
      b.stop();
      await Promise.all([one.close(), two.close()]);
    }
  });
});
