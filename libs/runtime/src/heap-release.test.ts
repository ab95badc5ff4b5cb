import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HeapRelease } from './heap-release.js';

// A burst that grows V8's young generation, then a release with the default spacing of its two
// collections; prints the young generation's size before and after. Run in its own process: the
// test runner's own allocations must not count in V8's allocation rate.
const YOUNG_GENERATION_CHILD = `
import v8 from 'node:v8';
import { HeapRelease } from './heap-release.ts';
const young = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space').space_size;
const keep = [];
const started = Date.now();
while (Date.now() - started < 1500) {
  const batch = [];
  for (let index = 0; index < 1000; index += 1) batch.push({ index, text: 'x' + index });
  if (keep.push(batch) > 100) keep.shift();
}
keep.length = 0;
const grown = young();
let rounds = 0;
new HeapRelease({
  after: 1,
  quietMs: 100,
  onRelease: () => {
    rounds += 1;
    if (rounds === 2) {
      console.log(JSON.stringify({ grown, after: young() }));
      process.exit(0);
    }
  },
}).idle(0);
setTimeout(() => {}, 30_000);
`;

describe('HeapRelease', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const setup = (after = 3) => {
    const collect = vi.fn();
    const released: number[] = [];
    const release = new HeapRelease({
      after,
      quietMs: 1_000,
      secondAfterMs: 3_000,
      collect,
      onRelease: ({ heapAfter }) => released.push(heapAfter),
    });
    return { collect, released, release };
  };

  it('collects once after start-up once nothing is in flight for the quiet period', () => {
    const { collect, released, release } = setup();
    release.idle(0);
    vi.advanceTimersByTime(999);
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(2_999);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1); // a second collection hands back the pages the first emptied
    expect(collect).toHaveBeenCalledTimes(2);
    expect(released).toHaveLength(2);
    // quiet again without new work: nothing more to give back
    release.idle(0);
    vi.advanceTimersByTime(10_000);
    expect(collect).toHaveBeenCalledTimes(2);
  });

  it('a delivery between the two collections cancels the second', () => {
    const { collect, release } = setup();
    release.idle(0);
    vi.advanceTimersByTime(1_000);
    release.busy();
    vi.advanceTimersByTime(10_000);
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it('waits for enough work, for nothing in flight, and for a whole quiet period', () => {
    const { collect, release } = setup();
    release.idle(0);
    vi.advanceTimersByTime(4_000); // both collections of the start-up release
    expect(collect).toHaveBeenCalledTimes(2);
    collect.mockClear();

    release.settled(0);
    release.settled(0);
    vi.advanceTimersByTime(5_000);
    expect(collect).not.toHaveBeenCalled(); // two commits are not a burst

    release.settled(2); // the third, with two still in flight
    vi.advanceTimersByTime(5_000);
    expect(collect).not.toHaveBeenCalled();

    release.settled(1);
    release.settled(0); // the last one settles: quiet starts
    vi.advanceTimersByTime(600);
    release.busy(); // a delivery during the quiet period postpones the release
    vi.advanceTimersByTime(5_000);
    expect(collect).not.toHaveBeenCalled();

    release.settled(0);
    vi.advanceTimersByTime(4_000);
    expect(collect).toHaveBeenCalledTimes(2);
  });

  it('does nothing when disabled or closed', () => {
    const disabled = setup(0);
    disabled.release.idle(0);
    disabled.release.settled(0);
    vi.advanceTimersByTime(10_000);
    expect(disabled.collect).not.toHaveBeenCalled();

    const closed = setup();
    closed.release.idle(0);
    closed.release.close();
    vi.advanceTimersByTime(10_000);
    expect(closed.collect).not.toHaveBeenCalled();
  });

  it('without an injected collector, runs a real full collection', async () => {
    vi.useRealTimers();
    let garbage: object[] | undefined = Array.from({ length: 300_000 }, (_, index) => ({ index }));
    expect(garbage).toHaveLength(300_000);
    garbage = undefined;
    const before = process.memoryUsage().heapUsed;
    const released = await new Promise<number>((resolve) =>
      new HeapRelease({ after: 1, quietMs: 1, onRelease: () => resolve(process.memoryUsage().heapUsed) }).idle(0),
    );
    // the 300,000 dropped objects (~10 MiB) are gone: only a full collection reclaims promoted garbage
    expect(before - released).toBeGreaterThan(5 * 2 ** 20);
  });

  it('gives back the young generation a burst grew (its second collection comes after V8 stops counting the burst)', async () => {
    vi.useRealTimers();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', YOUNG_GENERATION_CHILD],
      {
        cwd: fileURLToPath(new URL('.', import.meta.url)),
        timeout: 30_000,
      },
    );
    const { grown, after } = JSON.parse(stdout) as { grown: number; after: number };
    expect(grown).toBeGreaterThanOrEqual(16 * 2 ** 20);
    expect(after).toBeLessThanOrEqual(4 * 2 ** 20);
  }, 40_000);
});
