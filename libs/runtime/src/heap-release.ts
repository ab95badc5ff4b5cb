import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** How long nothing may be in flight before the heap is given back. */
const QUIET_MS = 2_000;
/**
 * When the second collection of a release follows the first. The first frees the garbage; pages it
 * emptied are only handed back by a later one. V8 also gives back its young generation (up to 32
 * MiB, grown during the burst) only at a full collection that finds the allocation rate low over
 * its last ~5 s of collections: a second collection soon after the first still counts the burst in
 * that window and keeps it, one more than 5 s later does not.
 */
const SECOND_AFTER_MS = 6_000;

export type HeapReleaseOptions = {
  /** Commits handled since the last release that make the next quiet period worth a collection; 0 disables. */
  readonly after: number;
  readonly quietMs?: number;
  /** From the first collection of a release to the second. */
  readonly secondAfterMs?: number;
  /** A full, compacting collection. */
  readonly collect?: () => void;
  /** After each collection of a release. */
  readonly onRelease?: (released: {
    readonly ms: number;
    readonly heapBefore: number;
    readonly heapAfter: number;
  }) => void;
};

/**
 * Gives memory back after a burst. Draining a backlog makes V8 grow its heap to keep pace, and it
 * keeps that heap committed once the process goes quiet: a worker that caught up on half a
 * million commits sat at 1.5× its resting size long after (docs/benchmarks.md, step-worker-memory).
 * Once nothing has been in flight for a quiet period after enough work, two full collections
 * return the surplus. Start-up counts as a burst (module compilation leaves garbage too). A busy
 * process never pays for it: any delivery during the quiet period postpones it.
 */
export class HeapRelease {
  readonly #after: number;
  readonly #quietMs: number;
  readonly #secondAfterMs: number;
  readonly #collect: (() => void) | undefined;
  #work: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HeapReleaseOptions) {
    this.#after = options.after;
    this.#quietMs = options.quietMs ?? QUIET_MS;
    this.#secondAfterMs = options.secondAfterMs ?? SECOND_AFTER_MS;
    this.#collect = options.after > 0 ? (options.collect ?? exposedGc()) : undefined;
    this.#work = options.after;
  }

  /** A commit arrived: not quiet any more. */
  busy(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** A commit was handled; `inFlight` commits are still being handled. */
  settled(inFlight: number): void {
    this.#work += 1;
    this.idle(inFlight);
  }

  /** Arms the release when nothing is in flight and enough work was done since the last one. */
  idle(inFlight: number): void {
    if (!this.#collect || inFlight > 0 || this.#work < this.#after || this.#timer) return;
    this.#timer = setTimeout(() => this.#release(), this.#quietMs);
    this.#timer.unref();
  }

  close(): void {
    this.busy();
    this.#work = 0;
  }

  #release(round = 1): void {
    this.#timer = undefined;
    this.#work = 0;
    const heapBefore = process.memoryUsage().heapTotal;
    const started = performance.now();
    this.#collect!();
    this.options.onRelease?.({
      ms: performance.now() - started,
      heapBefore,
      heapAfter: process.memoryUsage().heapTotal,
    });
    if (round === 1) {
      // cancelled like the first by a delivery meanwhile
      this.#timer = setTimeout(() => this.#release(round + 1), this.#secondAfterMs);
      this.#timer.unref();
    }
  }
}

/**
 * V8's full collection: `gc` when node runs with --expose-gc, otherwise the same function exposed
 * at run time (the flag only governs whether new contexts get a `gc` global).
 */
function exposedGc(): () => void {
  const global = (globalThis as { gc?: () => void }).gc;
  if (global) return global;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}
