import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createBwrapProvider,
  createNoneProvider,
  DEFAULT_SANDBOX_SETTINGS,
  detectCgroups,
  detectWorkspaceDisks,
  DiskLimit,
  SandboxPool,
  unmountWorkspacesUnder,
  type SandboxProvider,
} from '@flotilla/sandbox';
import { createToolContext, createTerminalTool, openWorkspace, ToolRegistry } from '@flotilla/tools';
import { median, ms, percentile, ratio, table } from './stats.js';

/**
 * `cgroup`: bwrap with each sandbox in a cgroup of its own (the tool runner's default where it may
 * make them); `disk`: bwrap with each workspace a filesystem of its own (the same); `bwrap`: neither.
 */
type Kind = 'bwrap' | 'cgroup' | 'disk' | 'none';

/** One tool runner's worth of sandboxes of `kind`: the same classes the tool runner uses (a pool, the terminal tool). */
async function harness(
  root: string,
  kind: Kind,
): Promise<{
  provider: SandboxProvider;
  pool: SandboxPool;
  tools: ToolRegistry;
  run: (conversation: string, command: string) => Promise<string>;
  close: () => Promise<void>;
}> {
  const settings = { ...DEFAULT_SANDBOX_SETTINGS, kind: kind === 'none' ? ('none' as const) : ('bwrap' as const) };
  const owner = { uid: settings.uid, gid: settings.gid };
  const provider =
    kind === 'none'
      ? createNoneProvider(settings)
      : createBwrapProvider(settings, {
          stateDir: join(root, `state-${kind}`),
          ownedRoot: root,
          cgroups: kind === 'cgroup' ? await detectCgroups() : { kind: 'none', reason: 'the rlimits-only baseline' },
          ...(kind === 'disk'
            ? {
                disks: await detectWorkspaceDisks(DiskLimit.Filesystem, root, {
                  bytes: settings.limits.workspaceBytes,
                  owner,
                  workspaces: root,
                }),
              }
            : {}),
        });
  const pool = new SandboxPool(provider, { idleStopMs: 3_600_000, maxOpen: 100_000 });
  const tools = new ToolRegistry([createTerminalTool()]);
  const run = async (conversation: string, command: string): Promise<string> => {
    const workspace = join(root, kind, conversation);
    await mkdir(workspace, { recursive: true });
    return pool.use({ id: conversation, workspace }, async ({ sandbox }) => {
      const context = createToolContext({
        workspace: await openWorkspace(workspace, { shownRoot: sandbox.workspacePath, owner: sandbox.owner }),
        sandbox,
        conversationId: conversation,
      });
      const result = await tools.execute({ name: 'terminal', arguments: JSON.stringify({ command }) }, context);
      const text = result.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      if (result.isError) throw new Error(`terminal failed in ${kind}: ${text}`);
      return text;
    });
  };
  const close = async (): Promise<void> => {
    await tools.close();
    await pool.closeAll();
  };
  return { provider, pool, tools, run, close };
}

/** A bare `bwrap … true`: the same namespaces and binds, no shell, no service around it. */
async function bareBwrap(workspace: string): Promise<number> {
  const started = performance.now();
  const child = spawn(
    'bwrap',
    [
      '--unshare-user',
      '--unshare-pid',
      '--unshare-net',
      '--die-with-parent',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--symlink',
      'usr/bin',
      '/bin',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--bind',
      workspace,
      '/workspace',
      '--',
      '/usr/bin/true',
    ],
    {
      stdio: 'ignore',
      ...(process.getuid?.() === 0 ? { uid: DEFAULT_SANDBOX_SETTINGS.uid, gid: DEFAULT_SANDBOX_SETTINGS.gid } : {}),
    },
  );
  await new Promise<void>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bwrap … true exited with ${code}`)))),
  );
  return performance.now() - started;
}

/** Proportional set size (shared pages split among their users) of a process, in bytes. */
async function pss(pid: string): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
}

/** Every process below `pid` (children, grandchildren, …). */
async function descendants(pid: number): Promise<string[]> {
  const parents = new Map<string, string[]>();
  for (const entry of (await readdir('/proc')).filter((name) => /^\d+$/.test(name))) {
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const parent = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
    if (parent) parents.set(parent, [...(parents.get(parent) ?? []), entry]);
  }
  const found: string[] = [];
  const pending = [String(pid)];
  while (pending.length > 0) {
    for (const child of parents.get(pending.pop()!) ?? []) {
      found.push(child);
      pending.push(child);
    }
  }
  return found;
}

async function selfPss(): Promise<number> {
  global.gc?.();
  await new Promise((resolve) => setTimeout(resolve, 200));
  return pss(String(process.pid));
}

/**
 * The sandbox's costs, each beside its baseline measured in the same run:
 * - a terminal command's round trip (the terminal tool, `true`) in a bwrap sandbox and unsandboxed;
 * - sandbox start to a ready shell (open, start bash, first command back) against a bare `bwrap … true`;
 * - memory per idle sandboxed conversation with `idle` of them open on one runner: the PSS of every
 *   process they run plus this process's growth, against the same with unsandboxed shells.
 */
export async function benchSandbox(roundTrips = 300, starts = 40, idle = 1_000): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'flotilla-bench-sandbox-'));
  const rows: string[][] = [['figure', 'sandboxed (bwrap)', 'baseline', 'ratio', 'difference', 'goal']];
  try {
    // round trips
    const cgroups = await detectCgroups();
    const disks = await detectWorkspaceDisks(DiskLimit.Auto, root, {
      bytes: DEFAULT_SANDBOX_SETTINGS.limits.workspaceBytes,
      owner: { uid: DEFAULT_SANDBOX_SETTINGS.uid, gid: DEFAULT_SANDBOX_SETTINGS.gid },
    });
    const kinds: Kind[] = [
      'none',
      'bwrap',
      ...(cgroups.kind === 'none' ? [] : (['cgroup'] as const)),
      ...(disks.kind === 'check' ? [] : (['disk'] as const)),
    ];
    const trips: Record<Kind, number[]> = { bwrap: [], cgroup: [], disk: [], none: [] };
    for (const kind of kinds) {
      const h = await harness(root, kind);
      await h.run('trip', 'true');
      for (let index = 0; index < 20; index += 1) await h.run('trip', 'true'); // warm-up
      for (let index = 0; index < roundTrips; index += 1) {
        const started = performance.now();
        await h.run('trip', 'true');
        trips[kind].push(performance.now() - started);
      }
      await h.close();
    }
    const [tripSandboxed, tripBare] = [median(trips.bwrap), median(trips.none)];
    rows.push([
      'terminal round trip, p50',
      ms(tripSandboxed),
      `${ms(tripBare)} unsandboxed`,
      ratio(tripSandboxed, tripBare),
      `${(tripSandboxed - tripBare).toFixed(3)} ms`,
      '≤ 1.2x or ≤ 1 ms more',
    ]);
    rows.push([
      'terminal round trip, p99',
      ms(percentile(trips.bwrap, 99)),
      `${ms(percentile(trips.none, 99))} unsandboxed`,
      ratio(percentile(trips.bwrap, 99), percentile(trips.none, 99)),
      '',
      '',
    ]);
    if (cgroups.kind !== 'none') {
      const inCgroup = median(trips.cgroup);
      rows.push([
        `terminal round trip in a cgroup ${cgroups.kind}, p50`,
        ms(inCgroup),
        `${ms(tripSandboxed)} rlimits only`,
        ratio(inCgroup, tripSandboxed),
        `${(inCgroup - tripSandboxed).toFixed(3)} ms`,
        '≤ 1.2x',
      ]);
    } else rows.push(['terminal round trip in a cgroup', 'n/a', `no cgroups here: ${cgroups.reason}`, '', '', '']);
    if (disks.kind !== 'check') {
      const onItsOwn = median(trips.disk);
      rows.push([
        'terminal round trip, workspace a filesystem of its own, p50',
        ms(onItsOwn),
        `${ms(tripSandboxed)} checked`,
        ratio(onItsOwn, tripSandboxed),
        `${(onItsOwn - tripSandboxed).toFixed(3)} ms`,
        '≤ 1.2x',
      ]);
    } else
      rows.push([
        'terminal round trip, workspace a filesystem of its own',
        'n/a',
        `not here: ${disks.reason}`,
        '',
        '',
        '',
      ]);

    // start to a ready shell
    const startTimes: number[] = [];
    const bare: number[] = [];
    {
      const h = await harness(root, 'bwrap');
      await mkdir(join(root, 'bare'), { recursive: true });
      for (let index = 0; index < 5; index += 1) {
        await h.run(`warm-${index}`, 'true');
        await bareBwrap(join(root, 'bare'));
      }
      for (let index = 0; index < starts; index += 1) {
        bare.push(await bareBwrap(join(root, 'bare')));
        const started = performance.now();
        await h.run(`start-${index}`, 'true');
        startTimes.push(performance.now() - started);
      }
      await h.close();
    }
    rows.push([
      'sandbox start to a ready shell (first command back), p50',
      ms(median(startTimes)),
      `${ms(median(bare))} bare bwrap … true`,
      ratio(median(startTimes), median(bare)),
      `${(median(startTimes) - median(bare)).toFixed(3)} ms`,
      '≤ 25 ms',
    ]);
    // the same starts, alternating with the rlimits-only sandbox: each sandbox in a cgroup of its own, each workspace a filesystem of its own (new, then mounted again)
    const alternating = async (kind: Kind, label: string, againLabel?: string): Promise<void> => {
      const [limited, plain] = [await harness(root, kind), await harness(root, 'bwrap')];
      const limitedStarts: number[] = [];
      const plainStarts: number[] = [];
      for (let index = 0; index < 5; index += 1) {
        await limited.run(`${kind}-warm-${index}`, 'true');
        await plain.run(`plain-${kind}-warm-${index}`, 'true');
      }
      for (let index = 0; index < starts; index += 1) {
        let started = performance.now();
        await limited.run(`${kind}-start-${index}`, 'true');
        limitedStarts.push(performance.now() - started);
        started = performance.now();
        await plain.run(`plain-${kind}-start-${index}`, 'true');
        plainStarts.push(performance.now() - started);
      }
      await limited.close();
      await plain.close();
      const [a, b] = [median(limitedStarts), median(plainStarts)];
      rows.push([
        `sandbox start, ${label}, p50`,
        ms(a),
        `${ms(b)} rlimits only`,
        ratio(a, b),
        `${(a - b).toFixed(3)} ms`,
        '≤ +10 ms',
      ]);
      if (againLabel === undefined) return;
      // as after the tool runner's host restarted: made, not mounted
      await unmountWorkspacesUnder(join(root, kind));
      // the same workspaces again, after the runner that made them stopped (their filesystems made, unmounted)
      const [again, plainAgain] = [await harness(root, kind), await harness(root, 'bwrap')];
      const mounts: number[] = [];
      const plainMounts: number[] = [];
      for (let index = 0; index < starts; index += 1) {
        let started = performance.now();
        await again.run(`${kind}-start-${index}`, 'true');
        mounts.push(performance.now() - started);
        started = performance.now();
        await plainAgain.run(`plain-${kind}-start-${index}`, 'true');
        plainMounts.push(performance.now() - started);
      }
      await again.close();
      await plainAgain.close();
      const [c, d] = [median(mounts), median(plainMounts)];
      rows.push([
        `sandbox start, ${againLabel}, p50`,
        ms(c),
        `${ms(d)} rlimits only`,
        ratio(c, d),
        `${(c - d).toFixed(3)} ms`,
        '≤ +10 ms',
      ]);
    };
    if (cgroups.kind !== 'none') await alternating('cgroup', `in a cgroup ${cgroups.kind}`);
    if (disks.kind !== 'check')
      await alternating(
        'disk',
        'a new workspace, a filesystem of its own',
        'a workspace made before, its filesystem mounted',
      );

    // idle memory
    const perConversation: Record<Kind, number> = { bwrap: 0, cgroup: 0, disk: 0, none: 0 };
    for (const kind of ['none', 'bwrap'] as const) {
      const h = await harness(root, kind);
      await h.run('memory-warm', 'true');
      const before = await selfPss();
      for (let index = 0; index < idle; index += 1) await h.run(`idle-${index}`, 'true');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const children = await descendants(process.pid);
      const childPss = (await Promise.all(children.map(pss))).reduce((sum, value) => sum + value, 0);
      const growth = (await selfPss()) - before;
      perConversation[kind] = (childPss + Math.max(0, growth)) / idle;
      await h.close();
    }
    const MiB = 1024 * 1024;
    rows.push([
      `memory per idle conversation, ${idle} open`,
      `${(perConversation.bwrap / MiB).toFixed(2)} MiB`,
      `${(perConversation.none / MiB).toFixed(2)} MiB unsandboxed`,
      ratio(perConversation.bwrap, perConversation.none),
      `${((perConversation.bwrap - perConversation.none) / MiB).toFixed(2)} MiB`,
      '≤ 4 MiB',
    ]);
  } finally {
    await unmountWorkspacesUnder(root);
    await rm(root, { recursive: true, force: true });
  }
  return table(rows);
}
