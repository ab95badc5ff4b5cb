import { describe, expect, it } from 'vitest';
import { QueuedCommits } from './queued-commits.js';

describe('QueuedCommits', () => {
  it('wakes a wait for a later commit when one with a higher sequence arrives, not a redelivered older one', async () => {
    const queued = new QueuedCommits(new AbortController().signal);
    queued.arrived('a', 5);
    const waiting = queued.laterWithin('a', 5, 5_000);
    const started = performance.now();
    setTimeout(() => queued.arrived('a', 3), 10); // an older commit redelivered: not later
    setTimeout(() => queued.arrived('b', 9), 20); // another conversation's
    setTimeout(() => queued.arrived('a', 6), 50);
    expect(await waiting).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(performance.now() - started).toBeLessThan(1_000);
    // answered at once while the later one is queued; forgotten once the conversation has nothing here
    expect(await queued.laterWithin('a', 5, 5_000)).toBe(true);
    queued.forget('a');
    expect(queued.later('a', 5)).toBe(false);
  });

  it('answers false after the wait, or at once on shutdown', async () => {
    const shutdown = new AbortController();
    const queued = new QueuedCommits(shutdown.signal);
    queued.arrived('a', 1);
    const started = performance.now();
    expect(await queued.laterWithin('a', 1, 40)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    expect(await queued.laterWithin('a', 1, 0)).toBe(false);

    const held = queued.laterWithin('a', 1, 5_000);
    const abortedAt = performance.now();
    setTimeout(() => shutdown.abort(), 10);
    expect(await held).toBe(false);
    expect(performance.now() - abortedAt).toBeLessThan(1_000);
    expect(await queued.laterWithin('a', 1, 5_000)).toBe(false);
  });
});
