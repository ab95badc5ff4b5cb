import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.js';
import { CommandQueue } from './command-queue.js';

const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

describe('CommandQueue', () => {
  it('runs one command at a time per key, in arrival order, keys side by side', async () => {
    const queue = new CommandQueue(0);
    const trace: string[] = [];
    let running = 0;
    let most = 0;
    const work = (name: string) => async () => {
      running += 1;
      most = Math.max(most, running);
      trace.push(`start ${name}`);
      await tick();
      trace.push(`end ${name}`);
      running -= 1;
      return name;
    };
    const results = await Promise.all([
      queue.run('a', work('a1')),
      queue.run('a', work('a2')),
      queue.run('a', work('a3')),
    ]);
    expect(results).toEqual(['a1', 'a2', 'a3']);
    expect(trace).toEqual(['start a1', 'end a1', 'start a2', 'end a2', 'start a3', 'end a3']);
    expect(most).toBe(1);
    most = 0;
    await Promise.all([queue.run('a', work('a')), queue.run('b', work('b'))]);
    expect(most).toBe(2);
    expect(queue.waiting('a')).toBe(0);
  });

  it('a failed command does not stop the line behind it', async () => {
    const queue = new CommandQueue(0);
    const failed = queue.run('a', () => Promise.reject(new Error('boom')));
    const next = queue.run('a', () => Promise.resolve('next'));
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
    expect(queue.waiting('a')).toBe(0);
  });

  it('refuses a bounded command past the limit with 429 rate_limited and Retry-After; unbounded ones still queue', async () => {
    const queue = new CommandQueue(2);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = queue.run('a', () => gate, { bounded: true });
    const second = queue.run('a', () => Promise.resolve(), { bounded: true });
    const refused = await queue.run('a', () => Promise.resolve(), { bounded: true }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ statusCode: 429, code: 'rate_limited', retryAfterSeconds: 1 });
    const unbounded = queue.run('a', () => Promise.resolve('pause'));
    expect(queue.waiting('a')).toBe(3);
    expect(await queue.run('b', () => Promise.resolve('other'), { bounded: true })).toBe('other');
    release();
    await Promise.all([first, second]);
    expect(await unbounded).toBe('pause');
    expect(await queue.run('a', () => Promise.resolve('again'), { bounded: true })).toBe('again');
  });
});
