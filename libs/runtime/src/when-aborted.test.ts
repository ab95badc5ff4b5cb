import { describe, expect, it } from 'vitest';
import { whenAborted } from './when-aborted.js';

describe('whenAborted', () => {
  it('runs every callback still registered when the signal aborts, once, on one listener', () => {
    const controller = new AbortController();
    let added = 0;
    const addEventListener = controller.signal.addEventListener.bind(controller.signal);
    controller.signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
      added += 1;
      addEventListener(...args);
    }) as AbortSignal['addEventListener'];
    const ran: string[] = [];
    whenAborted(controller.signal, () => ran.push('a'));
    const cancelB = whenAborted(controller.signal, () => ran.push('b'));
    const shared = (): void => void ran.push('c');
    whenAborted(controller.signal, shared);
    whenAborted(controller.signal, shared);
    cancelB();
    expect(added).toBe(1);
    controller.abort();
    controller.abort();
    expect(ran).toEqual(['a', 'c', 'c']);
  });

  it('runs at once for a signal already aborted, and registers again after an abort', () => {
    const ran: string[] = [];
    whenAborted(AbortSignal.abort(), () => ran.push('now'));
    expect(ran).toEqual(['now']);
    const controller = new AbortController();
    whenAborted(controller.signal, () => ran.push('first'));
    controller.abort();
    whenAborted(controller.signal, () => ran.push('late'));
    expect(ran).toEqual(['now', 'first', 'late']);
  });
});
