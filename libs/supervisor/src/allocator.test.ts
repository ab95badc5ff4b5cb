import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { allocatorEnv, findJemalloc, forgetPreloadedAllocator, PRELOADED_ENV } from './allocator.js';
import { ServiceProcess } from './service-process.js';

const LIB = '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2';

describe('allocatorEnv', () => {
  it('preloads jemalloc when found, with a background purge thread, unless told otherwise', () => {
    expect(allocatorEnv({}, LIB)).toEqual({
      LD_PRELOAD: LIB,
      [PRELOADED_ENV]: LIB,
      MALLOC_CONF: 'background_thread:true',
    });
    expect(
      allocatorEnv({ FLOTILLA_ALLOCATOR: 'jemalloc', LD_PRELOAD: '/opt/other.so', MALLOC_CONF: 'narenas:2' }, LIB),
    ).toEqual({
      LD_PRELOAD: `/opt/other.so ${LIB}`,
      [PRELOADED_ENV]: LIB,
    });
    expect(allocatorEnv({ LD_PRELOAD: LIB }, LIB)).toEqual({});
    expect(allocatorEnv({ FLOTILLA_ALLOCATOR: 'system' }, LIB)).toEqual({});
  });

  it('falls back to the system malloc when jemalloc is missing, unless it is required', () => {
    expect(allocatorEnv({}, null)).toEqual({});
    expect(() => allocatorEnv({ FLOTILLA_ALLOCATOR: 'jemalloc' }, null)).toThrow(/install libjemalloc2/);
    expect(() => allocatorEnv({ FLOTILLA_ALLOCATOR: 'tcmalloc' }, LIB)).toThrow(/must be jemalloc, system or unset/);
  });

  it("gives a service's children the environment it had before the preload", () => {
    const env: NodeJS.ProcessEnv = {
      PATH: '/bin',
      LD_PRELOAD: `/opt/other.so ${LIB}`,
      [PRELOADED_ENV]: LIB,
      MALLOC_CONF: 'background_thread:true',
    };
    forgetPreloadedAllocator(env);
    expect(env).toEqual({ PATH: '/bin', LD_PRELOAD: '/opt/other.so' });
    const untouched: NodeJS.ProcessEnv = { LD_PRELOAD: LIB, MALLOC_CONF: 'background_thread:true' };
    forgetPreloadedAllocator(untouched); // not preloaded by us: left alone
    expect(untouched).toEqual({ LD_PRELOAD: LIB, MALLOC_CONF: 'background_thread:true' });
  });
});

const jemalloc = findJemalloc();
describe.skipIf(!jemalloc)('a service process on jemalloc (when libjemalloc2 is installed)', () => {
  it('runs on jemalloc, and the commands it spawns do not', async () => {
    const lines: string[] = [];
    let exited: () => void = () => {};
    const done = new Promise<void>((resolve) => (exited = resolve));
    const probe = new ServiceProcess({
      name: 'probe',
      entry: fileURLToPath(new URL('./test-support/allocator-probe.ts', import.meta.url)),
      restart: false,
      env: { LD_PRELOAD: '', FLOTILLA_ALLOCATOR: 'jemalloc' },
      onLine: (_name, line, stream) => {
        if (stream === 'stdout') lines.push(line);
      },
      onExit: () => exited(),
    });
    probe.start();
    await done;
    expect(JSON.parse(lines.at(-1) ?? '{}')).toEqual({ self: true, child: false, preload: null });
  }, 30_000);
});
if (!jemalloc) console.warn('skipped: no libjemalloc.so.2 here (apt-get install libjemalloc2)');
