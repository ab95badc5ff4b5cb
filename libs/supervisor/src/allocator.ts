import { existsSync } from 'node:fs';

/**
 * Which malloc a service process runs on.
 *
 * Under glibc's malloc a burst leaves its memory behind: draining a backlog of 500,000 commits
 * grew a step worker's main heap from ~6 to ~64 MiB, and freed chunks between live ones stay
 * resident (nothing but `malloc_trim` gives them back; no malloc setting does). jemalloc returns
 * freed pages on its own (docs/benchmarks.md, step-worker-memory). Services run on it where the
 * system has it (Debian's `libjemalloc2`; the container image installs it), preloaded.
 *
 * `FLOTILLA_ALLOCATOR`: `jemalloc` (required: an error without it), `system` (glibc's malloc), or
 * unset (jemalloc when found).
 */
const ALLOCATOR_ENV = 'FLOTILLA_ALLOCATOR';
/** Set in a service's environment to the library preloaded for it, so its own children can go without. */
export const PRELOADED_ENV = 'FLOTILLA_PRELOADED_ALLOCATOR';
/** jemalloc purges freed pages from a thread of its own, so an idle service gives memory back too. */
const JEMALLOC_CONF = 'background_thread:true';

const JEMALLOC_PATHS = [
  '/usr/local/lib/libjemalloc.so.2',
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
  '/usr/lib/libjemalloc.so.2',
];

export function findJemalloc(): string | undefined {
  return process.platform === 'linux' ? JEMALLOC_PATHS.find((path) => existsSync(path)) : undefined;
}

/**
 * The environment additions that run a child on the chosen allocator (none for the system's).
 * `jemalloc` is the library's path, null when the system has none.
 */
export function allocatorEnv(
  env: NodeJS.ProcessEnv,
  jemalloc: string | null = findJemalloc() ?? null,
): NodeJS.ProcessEnv {
  const choice = env[ALLOCATOR_ENV] ?? 'auto';
  if (choice !== 'auto' && choice !== 'jemalloc' && choice !== 'system') {
    throw new Error(`${ALLOCATOR_ENV} must be jemalloc, system or unset (jemalloc when installed), not "${choice}"`);
  }
  if (choice === 'system') return {};
  if (jemalloc === null) {
    if (choice === 'jemalloc')
      throw new Error(`${ALLOCATOR_ENV}=jemalloc, but no libjemalloc.so.2 was found (install libjemalloc2)`);
    return {};
  }
  const preload = env['LD_PRELOAD']?.split(/[\s:]+/).filter(Boolean) ?? [];
  if (preload.includes(jemalloc)) return {};
  return {
    LD_PRELOAD: [...preload, jemalloc].join(' '),
    [PRELOADED_ENV]: jemalloc,
    ...(env['MALLOC_CONF'] === undefined ? { MALLOC_CONF: JEMALLOC_CONF } : {}),
  };
}

/**
 * Takes the allocator preloaded for this process out of its environment, so that what it spawns
 * (the commands a terminal runs) starts on the system's malloc, as it would anywhere else. The
 * process itself keeps jemalloc: a preload is read once, at start.
 */
export function forgetPreloadedAllocator(env: NodeJS.ProcessEnv = process.env): void {
  const preloaded = env[PRELOADED_ENV];
  if (preloaded === undefined) return;
  const kept = env['LD_PRELOAD']?.split(/[\s:]+/).filter((entry) => entry !== '' && entry !== preloaded) ?? [];
  if (kept.length > 0) env['LD_PRELOAD'] = kept.join(' ');
  else delete env['LD_PRELOAD'];
  if (env['MALLOC_CONF'] === JEMALLOC_CONF) delete env['MALLOC_CONF'];
  delete env[PRELOADED_ENV];
}
