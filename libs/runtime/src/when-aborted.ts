const callbacks = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Runs `callback` once when `signal` aborts (at once if it already has); the returned function
 * cancels it. Every caller of one signal shares a single listener on it: a service's shutdown
 * signal is followed by every commit in flight, and an `EventTarget` walks all of its listeners
 * on each add and remove, which at a thousand steps in flight was a visible share of a worker's CPU.
 */
export function whenAborted(signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback();
    return () => undefined;
  }
  let pending = callbacks.get(signal);
  if (!pending) {
    const set = new Set<() => void>();
    pending = set;
    callbacks.set(signal, set);
    signal.addEventListener(
      'abort',
      () => {
        callbacks.delete(signal);
        for (const run of set) run();
        set.clear();
      },
      { once: true },
    );
  }
  const entry = (): void => callback();
  pending.add(entry);
  const set = pending;
  return () => void set.delete(entry);
}
