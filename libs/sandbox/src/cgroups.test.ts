import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBwrapProvider } from './bwrap/bwrap-provider.js';
import { cgroupMounts, detectCgroups, ownCgroups, sweepIdleCgroups, type CgroupSupport } from './cgroups.js';
import type { Sandbox, SandboxProvider } from './sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, type SandboxSettings } from './settings.js';

const MiB = 1024 * 1024;

describe('reading the cgroup hierarchies', () => {
  it('finds v1 controllers by their mount options and the process’s own path in each', () => {
    const mountinfo = [
      '25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755',
      '31 25 0:27 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory',
      '32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct',
      '33 25 0:29 / /sys/fs/cgroup/pids rw,relatime shared:14 - cgroup cgroup rw,pids',
      '34 25 0:30 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw',
    ].join('\n');
    const mounts = cgroupMounts(mountinfo);
    expect(Object.fromEntries(mounts.v1)).toEqual({
      memory: '/sys/fs/cgroup/memory',
      cpu: '/sys/fs/cgroup/cpu,cpuacct',
      pids: '/sys/fs/cgroup/pids',
    });
    expect(mounts.v2).toBe('/sys/fs/cgroup/unified');
    const own = ownCgroups('12:pids:/runner\n4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/init.scope\n');
    expect(Object.fromEntries(own.v1)).toEqual({ pids: '/runner', memory: '/process_api/abc', cpu: '/', cpuacct: '/' });
    expect(own.v2).toBe('/init.scope');
  });

  it('finds a unified (v2) hierarchy', () => {
    expect(cgroupMounts('30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate')).toEqual({
      v1: new Map(),
      v2: '/sys/fs/cgroup',
    });
    expect(ownCgroups('0::/kubepods/pod1/c2\n')).toEqual({ v1: new Map(), v2: '/kubepods/pod1/c2' });
  });
});

async function run(
  sandbox: Sandbox,
  script: string,
  timeoutMs = 30_000,
): Promise<{ output: string; code: number | null }> {
  const child = await sandbox.spawn('bash', ['-c', script]);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { output, code: exit.code };
}

const support = await detectCgroups();
if (support.kind === 'none')
  console.warn(`cgroup tests SKIPPED: this machine gives no cgroups to make (${support.reason})`);

describe.skipIf(support.kind === 'none')('a sandbox in a cgroup of its own', () => {
  let root: string;
  let provider: SandboxProvider;
  const settings: SandboxSettings = {
    ...DEFAULT_SANDBOX_SETTINGS,
    limits: { ...DEFAULT_SANDBOX_SETTINGS.limits, processes: 32, memoryBytes: 256 * MiB, cpus: 0.2 },
  };
  const open = async (name: string): Promise<Sandbox> => {
    const workspace = path.join(root, 'workspaces', name);
    await mkdir(workspace, { recursive: true });
    return provider.open({ id: `acme.${name}`, workspace });
  };
  /** The folder of a sandbox's cgroup for a controller. */
  const cgroupDir = async (controller: 'memory' | 'pids' | 'cpu', name: string): Promise<string> => {
    const base =
      (support as Extract<CgroupSupport, { kind: 'v1' }>).kind === 'v1'
        ? (support as Extract<CgroupSupport, { kind: 'v1' }>).bases[controller]
        : (support as Extract<CgroupSupport, { kind: 'v2' }>).base;
    const found = (await readdir(base)).find((entry) => entry.startsWith(`acme_${name}-`));
    if (!found) throw new Error(`no cgroup of ${name} under ${base}`);
    return path.join(base, found);
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-cgroups-'));
    provider = createBwrapProvider(settings, { stateDir: path.join(root, 'state'), ownedRoot: root, cgroups: support });
    expect(provider.describe().enforcement).toBe(`cgroup ${support.kind} per sandbox, and rlimits per process`);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('holds all its processes’ memory together under its limit: past it the kernel kills in it alone, and says so', async () => {
    const sandbox = await open('memory');
    const neighbour = await open('beside');
    try {
      // four processes of 100 MiB each, every one under the per-process limit, 400 MiB together
      const hogs = await run(
        sandbox,
        'for i in 1 2 3 4; do (head -c 100M /dev/zero | tail > /dev/null) & done; wait; echo done',
        50_000,
      );
      expect(hogs.output).toContain('done');
      expect(sandbox.outOfMemoryKills!()).toBeGreaterThan(0);
      if (support.kind === 'v1') {
        const peak = Number(
          await readFile(path.join(await cgroupDir('memory', 'memory'), 'memory.max_usage_in_bytes'), 'utf8'),
        );
        expect(peak).toBeLessThanOrEqual(256 * MiB);
      }
      expect(await run(neighbour, 'echo still fine')).toMatchObject({ output: 'still fine\n', code: 0 });
      expect(neighbour.outOfMemoryKills!()).toBe(0);
    } finally {
      await sandbox.close();
      await neighbour.close();
    }
  }, 60_000);

  it('counts its processes together: past its limit no more start in it', async () => {
    const sandbox = await open('pids');
    try {
      // more sleeps than the sandbox may hold processes; its cgroup counts every one of them
      const running = run(sandbox, 'for i in $(seq 40); do sleep 2 & done 2>/dev/null; wait');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const pids = await cgroupDir('pids', 'pids');
      let most = 0;
      for (let sample = 0; sample < 50; sample += 1) {
        most = Math.max(most, Number((await readFile(path.join(pids, 'pids.current'), 'utf8')).trim()));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await running;
      expect((await readFile(path.join(pids, 'pids.max'), 'utf8')).trim()).toBe('32');
      expect(most).toBeGreaterThan(20);
      expect(most).toBeLessThanOrEqual(32);
    } finally {
      await sandbox.close();
    }
  });

  it('an idle cgroup is swept (what a killed runner left), one with a process never; a sandbox whose cgroup was swept makes it again', async () => {
    const busy = await open('swept-busy');
    const idle = await open('swept-idle');
    try {
      const running = run(busy, 'sleep 2');
      // its cgroup made, its processes gone: as a runner killed before closing its sandboxes leaves it
      await run(idle, 'true');
      const [busyDir, idleDir] = [await cgroupDir('pids', 'swept-busy'), await cgroupDir('pids', 'swept-idle')];
      // the sleeping process is in its cgroup before the sweeps (run() has not waited for it to start)
      await expect
        .poll(() => readFile(path.join(busyDir, 'cgroup.procs'), 'utf8').catch(() => ''), { timeout: 5_000 })
        .not.toBe('');
      // young ones may be a sibling runner's being made: left
      await sweepIdleCgroups(support, 60_000);
      await expect(readdir(idleDir)).resolves.toContain('cgroup.procs');
      // the idle one's last process may still be leaving it: the kernel refuses its removal until then
      let swept = 0;
      await expect
        .poll(
          async () => {
            swept += await sweepIdleCgroups(support, 0);
            return readdir(idleDir).then(
              () => 'there',
              () => 'gone',
            );
          },
          { timeout: 5_000 },
        )
        .toBe('gone');
      expect(swept).toBeGreaterThan(0);
      await expect(readdir(busyDir)).resolves.toContain('cgroup.procs');
      expect((await running).code).toBe(0);
      expect(await run(idle, 'echo again')).toMatchObject({ output: 'again\n', code: 0 });
      expect((await readFile(path.join(await cgroupDir('pids', 'swept-idle'), 'pids.max'), 'utf8')).trim()).toBe('32');
    } finally {
      await busy.close();
      await idle.close();
    }
  });

  it('gets its share of the CPU and no more, and its cgroup goes with it', async () => {
    const sandbox = await open('cpu');
    await run(sandbox, 'timeout 1.5 bash -c "while :; do :; done"; true');
    const cpu = await cgroupDir('cpu', 'cpu');
    const stat = await readFile(path.join(cpu, 'cpu.stat'), 'utf8');
    // 0.2 CPU: throttled in most of its periods
    expect(Number(/nr_throttled (\d+)/.exec(stat)?.[1])).toBeGreaterThan(5);
    await sandbox.close();
    await expect(readdir(cpu)).rejects.toThrow(/ENOENT/);
  });
});
