import { describe, expect, it } from 'vitest';
import { CondensationWaits } from './condensation-waits.js';

const one = { tenant: 'acme', conversation: 'one' };
const two = { tenant: 'acme', conversation: 'two' };

describe('CondensationWaits', () => {
  it('offers waits past the threshold for checking, oldest first, reports each confirmed one once, and forgets settled ones', () => {
    const waits = new CondensationWaits({ warnAfterMs: 1_000 });
    waits.waiting(one, 7, 10_000);
    waits.waiting(one, 7, 10_500); // the same wait
    waits.waiting(two, 3, 10_800);
    expect(waits.overdue(10_900)).toEqual([]);
    expect(waits.report(10_900)).toEqual({ waiting: 2, oldestMs: 900 });
    expect(waits.overdue(11_900)).toEqual([
      { ref: one, streamSeq: 7, waitedMs: 1_900, warned: false },
      { ref: two, streamSeq: 3, waitedMs: 1_100, warned: false },
    ]);
    expect(waits.confirm(one)).toBe(true);
    expect(waits.confirm(one)).toBe(false);
    expect(waits.overdue(12_000)[0]).toMatchObject({ ref: one, warned: true });
    // the log moved on for `two` (another instance got its condensation): dropped
    waits.settled(two);
    expect(waits.report(12_000)).toEqual({ waiting: 1, oldestMs: 2_000 });
    // a new wait of the same conversation, at a later message, starts over
    waits.waiting(one, 9, 13_000);
    expect(waits.overdue(13_500)).toEqual([]);
    waits.settled(one);
    expect(waits.report(20_000)).toEqual({ waiting: 0, oldestMs: 0 });
  });

  it('tracks at most the configured number of conversations', () => {
    const waits = new CondensationWaits({ maxConversations: 1 });
    waits.waiting(one, 1, 0);
    waits.waiting(two, 1, 0);
    expect(waits.report(0).waiting).toBe(1);
  });
});
