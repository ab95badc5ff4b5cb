import { describe, expect, it } from 'vitest';
import { TenantQueue } from './tenant-queue.js';

describe('tenant queue', () => {
  it("serves the tenant with the fewest in flight first, each tenant's commits in the order they came", () => {
    const queue = new TenantQueue<string>({ capacity: 10, reserve: 0, activeForMs: 1_000, now: () => 0 });
    for (let index = 0; index < 5; index += 1) queue.push('flood', `a${index}`);
    queue.push('small', 'b0');
    queue.push('small', 'b1');
    const order = Array.from({ length: 7 }, () => queue.next(10)!.item);
    // flood's first (both at 0, flood served least recently), then small (0 in flight), then alternating by in-flight counts
    expect(order).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'a3', 'a4']);
    expect(queue.held).toBe(0);
    expect(queue.next(10)).toBeUndefined();
  });

  it('keeps the reserve and the slots a tenant under its share used lately for it while it is active, and gives every slot to a tenant alone', () => {
    let now = 0;
    const queue = new TenantQueue<string>({ capacity: 4, reserve: 1, activeForMs: 1_000, now: () => now });
    for (let index = 0; index < 10; index += 1) queue.push('flood', `a${index}`);
    // alone: all four slots
    expect([queue.next(4), queue.next(3), queue.next(2), queue.next(1)].map((next) => next?.item)).toEqual([
      'a0',
      'a1',
      'a2',
      'a3',
    ]);
    for (let index = 0; index < 4; index += 1) queue.finished('flood');
    queue.push('small', 'b0');
    // two active: the flood (at 0 in flight) and small; small first, then the flood up to the reserve
    expect(queue.next(4)?.item).toBe('b0');
    queue.finished('small');
    expect(queue.next(4)?.item).toBe('a4');
    expect(queue.next(3)?.item).toBe('a5');
    // two free: one is the reserve, one the slot small used and gave back: the flood (2 in flight, share 2) may take neither
    expect(queue.next(2)).toBeUndefined();
    // small, under its share, takes one
    queue.push('small', 'b1');
    expect(queue.next(2)?.item).toBe('b1');
    expect(queue.next(1)).toBeUndefined();
    // once small has been idle past activeForMs, the flood has every slot again
    queue.finished('small');
    now = 2_000;
    expect(queue.next(2)?.item).toBe('a6');
    expect(queue.next(1)?.item).toBe('a7');
  });

  it('hands back everything waiting when drained, and refuses a reserve as large as the capacity', () => {
    const queue = new TenantQueue<number>({ capacity: 2, reserve: 1, activeForMs: 1_000 });
    queue.push('a', 1);
    queue.push('b', 2);
    queue.push('a', 3);
    expect(queue.drain().sort()).toEqual([1, 2, 3]);
    expect(queue.held).toBe(0);
    expect(() => new TenantQueue({ capacity: 2, reserve: 2, activeForMs: 1 })).toThrow(RangeError);
    expect(() => queue.finished('a')).toThrow();
  });
});
