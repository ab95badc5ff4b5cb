import { readFileSync } from 'node:fs';
import { forgetPreloadedAllocator } from '@flotilla/supervisor';

/**
 * The malloc this process runs on (for its ready log line), after taking a preloaded allocator out
 * of the environment its children inherit (docs/operations.md, "Memory").
 */
export function adoptAllocator(): 'jemalloc' | 'system' {
  forgetPreloadedAllocator();
  try {
    return readFileSync('/proc/self/maps', 'utf8').includes('libjemalloc') ? 'jemalloc' : 'system';
  } catch {
    return 'system'; // not Linux: whatever the platform's malloc is
  }
}
