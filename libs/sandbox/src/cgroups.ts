import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Control groups for sandboxes: memory, processes and CPU limited per sandbox (all its processes
 * together) by the kernel, where the service may create cgroups below its own. Version 1 (one
 * hierarchy per controller) and version 2 (one unified hierarchy) are both read from the
 * process's own /proc/self/mountinfo and /proc/self/cgroup.
 */
export type CgroupSupport =
  | { readonly kind: 'v1'; readonly bases: Readonly<Record<Controller, string>> }
  | { readonly kind: 'v2'; readonly base: string }
  | { readonly kind: 'none'; readonly reason: string };

export const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
export type Controller = (typeof CONTROLLERS)[number];

/** The folder below the service's own cgroup that holds its sandboxes' cgroups. */
const SANDBOXES = 'flotilla-sandboxes';
/** cgroup v2: where the service moves itself when its own cgroup must become an inner node. */
const SERVICE_LEAF = 'flotilla-service';
const CPU_PERIOD_US = 100_000;

/** cgroup mounts from /proc/self/mountinfo: each v1 controller's mount point, and the v2 mount. */
export function cgroupMounts(mountinfo: string): {
  readonly v1: ReadonlyMap<string, string>;
  readonly v2: string | undefined;
} {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const mountPoint = before.split(' ')[4];
    const [type, , options = ''] = after.split(' ');
    if (mountPoint === undefined) continue;
    if (type === 'cgroup2') v2 ??= mountPoint;
    else if (type === 'cgroup')
      for (const option of options.split(','))
        if ((CONTROLLERS as readonly string[]).includes(option)) v1.set(option, mountPoint);
  }
  return { v1, v2 };
}

/** The process's own cgroups from /proc/self/cgroup: each v1 controller's path, and the v2 path. */
export function ownCgroups(procCgroup: string): {
  readonly v1: ReadonlyMap<string, string>;
  readonly v2: string | undefined;
} {
  const v1 = new Map<string, string>();
  let v2: string | undefined;
  for (const line of procCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!match) continue;
    const [, controllers = '', where = '/'] = match;
    if (controllers === '') v2 = where;
    else for (const controller of controllers.split(',')) v1.set(controller, where);
  }
  return { v1, v2 };
}

/** Whether this process may make sandbox cgroups, and where. Never throws: `none` says why not. */
export async function detectCgroups(proc = '/proc/self'): Promise<CgroupSupport> {
  try {
    const mounts = cgroupMounts(await readFile(`${proc}/mountinfo`, 'utf8'));
    const own = ownCgroups(await readFile(`${proc}/cgroup`, 'utf8'));
    if (CONTROLLERS.every((controller) => mounts.v1.has(controller) && own.v1.has(controller))) {
      const bases = Object.fromEntries(
        CONTROLLERS.map((controller) => [
          controller,
          path.join(mounts.v1.get(controller)!, own.v1.get(controller)!, SANDBOXES),
        ]),
      ) as Record<Controller, string>;
      for (const base of Object.values(bases)) await mkdir(base, { recursive: true });
      return { kind: 'v1', bases };
    }
    if (mounts.v2 !== undefined && own.v2 !== undefined)
      return { kind: 'v2', base: await prepareV2(path.join(mounts.v2, own.v2)) };
    return { kind: 'none', reason: 'no cgroup hierarchy with the memory, pids and cpu controllers is mounted' };
  } catch (error) {
    return { kind: 'none', reason: (error as Error).message };
  }
}

/**
 * cgroup v2 lets only leaves hold processes: the controllers are enabled below the service's own
 * cgroup, the service moving itself into a leaf of it first when it must.
 */
async function prepareV2(own: string): Promise<string> {
  const available = (await readFile(path.join(own, 'cgroup.controllers'), 'utf8')).split(/\s+/);
  const missing = CONTROLLERS.filter((controller) => !available.includes(controller));
  if (missing.length > 0) throw new Error(`the cgroup ${own} does not offer the ${missing.join(', ')} controller(s)`);
  const enable = CONTROLLERS.map((controller) => `+${controller}`).join(' ');
  try {
    await writeFile(path.join(own, 'cgroup.subtree_control'), enable);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
    await mkdir(path.join(own, SERVICE_LEAF), { recursive: true });
    await writeFile(path.join(own, SERVICE_LEAF, 'cgroup.procs'), String(process.pid));
    await writeFile(path.join(own, 'cgroup.subtree_control'), enable);
  }
  const base = path.join(own, SANDBOXES);
  await mkdir(base, { recursive: true });
  await writeFile(path.join(base, 'cgroup.subtree_control'), enable);
  return base;
}

export type CgroupLimits = { readonly memoryBytes: number; readonly processes: number; readonly cpus: number };

/** One sandbox's cgroup (one per controller under v1): its limits, what its processes join, its OOM kills. */
export class SandboxCgroup {
  private constructor(
    readonly support: Exclude<CgroupSupport, { kind: 'none' }>,
    /** The cgroup's folders: one per controller (v1), or one (v2). */
    readonly dirs: readonly string[],
  ) {}

  /** Makes the sandbox's cgroup with its limits (a name already there is reused: its limits set again). */
  static async create(
    support: Exclude<CgroupSupport, { kind: 'none' }>,
    id: string,
    limits: CgroupLimits,
  ): Promise<SandboxCgroup> {
    const name = cgroupName(id);
    const quota = String(Math.max(1_000, Math.round(limits.cpus * CPU_PERIOD_US)));
    if (support.kind === 'v1') {
      const dirs = CONTROLLERS.map((controller) => path.join(support.bases[controller], name));
      const [memory, pids, cpu] = dirs as [string, string, string];
      for (const dir of dirs) await mkdir(dir, { recursive: true });
      await writeFile(path.join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // swap counts too where the kernel accounts it (memsw), so a sandbox cannot page its way past its limit
      await writeFile(path.join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(
        () => undefined,
      );
      await writeFile(path.join(pids, 'pids.max'), String(limits.processes));
      await writeFile(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(path.join(cpu, 'cpu.cfs_quota_us'), quota);
      return new SandboxCgroup(support, dirs);
    }
    const dir = path.join(support.base, name);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'memory.max'), String(limits.memoryBytes));
    await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined);
    await writeFile(path.join(dir, 'pids.max'), String(limits.processes));
    await writeFile(path.join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
    return new SandboxCgroup(support, [dir]);
  }

  /**
   * Puts a process in the cgroup (every controller's, under v1). Done to the sandbox's first
   * process while it waits at bwrap's gate, before the command starts: all it starts is born inside.
   */
  join(pid: number): void {
    for (const dir of this.dirs) writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
  }

  /** Whether its folders are still there (a sweep removes an idle one). */
  exists(): boolean {
    return this.dirs.every((dir) => existsSync(dir));
  }

  /** Processes the kernel killed for the sandbox's memory so far (a kernel file of a few lines, read at once: microseconds). */
  outOfMemoryKills(): number {
    const file =
      this.support.kind === 'v1'
        ? path.join(this.dirs[0]!, 'memory.oom_control')
        : path.join(this.dirs[0]!, 'memory.events');
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      // removed with its sandbox
    }
    return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
  }

  /** Removes the cgroup once its processes are gone (a few tries while the last ones exit). */
  async remove(): Promise<void> {
    for (const dir of this.dirs) {
      for (let attempt = 0; ; attempt += 1) {
        try {
          await rmdir(dir);
          break;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          if (code !== 'EBUSY' || attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    }
  }
}

/**
 * Removes sandbox cgroups nobody uses (no process in them, made longer than `olderThanMs` ago):
 * what a tool runner killed before it closed its sandboxes left behind. A cgroup with processes
 * is never removed (the kernel refuses), and a young one may be a sibling runner's being made,
 * before its first process joins. Returns how many it removed.
 */
export async function sweepIdleCgroups(support: CgroupSupport, olderThanMs: number): Promise<number> {
  if (support.kind === 'none') return 0;
  const bases = support.kind === 'v1' ? Object.values(support.bases) : [support.base];
  let removed = 0;
  for (const base of bases) {
    for (const entry of await readdir(base, { withFileTypes: true }).catch(() => [])) {
      if (!entry.isDirectory()) continue;
      const dir = path.join(base, entry.name);
      const made = await stat(dir).then(
        (info) => info.mtimeMs,
        () => Number.NaN,
      );
      if (!(Date.now() - made >= olderThanMs)) continue;
      // the kernel refuses (EBUSY) while a process is in it
      if (
        await rmdir(dir).then(
          () => true,
          () => false,
        )
      )
        removed += 1;
    }
  }
  return removed;
}

/** A cgroup folder's name for a sandbox id: its safe characters, and a hash of it so two ids never share one. */
function cgroupName(id: string): string {
  let hash = 2166136261;
  for (let index = 0; index < id.length; index += 1) hash = Math.imul(hash ^ id.charCodeAt(index), 16777619) >>> 0;
  return `${id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}-${hash.toString(16)}`;
}
