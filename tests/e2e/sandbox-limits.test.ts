// A conversation's sandbox held to its limits (processes, memory, disk, a runaway grep) while the
// runner and the other conversations go on, and a sandbox's life (stopped when idle, removed with
// its conversation). (What a terminal cannot reach: sandbox-isolation.test.ts.)
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerRegistry } from '@flotilla/runtime';
import {
  DEFAULT_SANDBOX_SETTINGS,
  detectCgroups,
  detectWorkspaceDisks,
  DiskLimit,
  WorkspaceDisks,
} from '@flotilla/sandbox';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';
import { observationTexts, runCommands } from './sandbox-support.js';

/** Host pids of the sandboxes' bwrap processes, and how many processes their process groups hold in all. */
async function sandboxedProcesses(): Promise<string[]> {
  return (await sandboxGroups()).leaders;
}

async function sandboxGroups(): Promise<{ leaders: string[]; members: number }> {
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const stats = await Promise.all(
    pids.map(async (pid) => {
      const [command, stat] = await Promise.all([
        readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''),
        readFile(`/proc/${pid}/stat`, 'utf8').catch(() => ''),
      ]);
      return { pid, command, group: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2] };
    }),
  );
  const leaders = stats
    .filter((entry) => entry.command.startsWith('bwrap\0') && entry.group === entry.pid)
    .map((entry) => entry.pid);
  return {
    leaders,
    members: stats.filter((entry) => entry.group !== undefined && leaders.includes(entry.group)).length,
  };
}

const cgroups = await detectCgroups();
/** Whether a tool runner here gives each workspace a filesystem of its own (root, loop devices, util-linux and e2fsprogs). */
const disks = await (async () => {
  const scratch = await mkdtemp(join(tmpdir(), 'flotilla-disk-probe-'));
  try {
    return await detectWorkspaceDisks(DiskLimit.Auto, scratch, {
      bytes: DEFAULT_SANDBOX_SETTINGS.limits.workspaceBytes,
      owner: { uid: DEFAULT_SANDBOX_SETTINGS.uid, gid: DEFAULT_SANDBOX_SETTINGS.gid },
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
})();
if (disks.kind === 'check') console.warn(`the workspace filesystem test is SKIPPED: ${disks.reason}`);
if (cgroups.kind === 'none')
  console.warn(`sandbox memory test SKIPPED: this machine gives no cgroups to make (${cgroups.reason})`);

describe('a conversation’s limits', () => {
  it('contain a fork bomb, a memory hog and a disk filler; the runner, its heartbeats and the other conversations go on', async () => {
    // the runners' liveness window as deployments have it (10 s, not the harness's 3 s for quick
    // takeovers): the sandbox's CPU is not capped, and on a 2-core machine a fork bomb beside a
    // memory hog has delayed the runner's heartbeats past 3 s
    const livenessMs = 10_000;
    await using system = await startTestSystem({
      env: { FLOTILLA_RUNNER_LIVENESS_MS: String(livenessMs) },
      toolRunnerEnv: {
        FLOTILLA_SANDBOX_MAX_PROCESSES: '64',
        FLOTILLA_SANDBOX_MEMORY_MB: '256',
        FLOTILLA_SANDBOX_FILE_MB: '16',
        FLOTILLA_SANDBOX_DISK_MB: '64',
        // the check from outside, where a workspace cannot be a filesystem of its own (that limit's test is below)
        FLOTILLA_SANDBOX_DISK_LIMIT: 'check',
      },
    });
    const runners = await RunnerRegistry.open(system.nc, { livenessMs });
    const runnerId = async (): Promise<string | undefined> => (await runners.list())[0]?.runner;
    const hostile = { tenant: 'acme', conversation: 'hostile' };
    const calm = { tenant: 'acme', conversation: 'calm' };
    await system.start(hostile, {
      id: 'hostile',
      steps: 4,

      commands: [
        'bomb() { bomb | bomb & }; bomb 2>/dev/null; sleep 3; ps -e --no-headers | wc -l; kill -9 -1 2>/dev/null; echo bomb-contained',
        `awk 'BEGIN { s = "x"; while (1) s = s s }' 2>&1 | tail -1; echo "hog exit \${PIPESTATUS[0]}"`,
        'for i in $(seq 1 40); do head -c 8000000 /dev/zero > fill-$i 2>/dev/null || break; sleep 0.1; done; echo filler-finished',
        'rm -f fill-*; du -sm . | cut -f1; echo cleaned',
      ],
    });
    await system.start(calm, { id: 'calm', steps: 6, sleep: 1 });
    const alive: boolean[] = [];
    let mostSandboxed = 0;
    const watch = setInterval(() => {
      void runnerId().then((id) => alive.push(id !== undefined));
      void sandboxGroups().then(({ members }) => (mostSandboxed = Math.max(mostSandboxed, members)));
    }, 500);
    try {
      await system.waitForStatus([hostile, calm], ['finished', 'error', 'stuck'], 120_000);
    } finally {
      clearInterval(watch);
    }
    expect(await system.status(hostile)).toBe('finished');
    expect(await system.status(calm)).toBe('finished');
    expect((await system.readEffects()).filter((line) => line.startsWith('calm '))).toHaveLength(6);
    // the runner never missed its liveness window, and never restarted
    expect(alive.length).toBeGreaterThan(4);
    expect(alive.every(Boolean)).toBe(true);
    expect(system.processes.find((process) => process.name.startsWith('tool-runner'))!.restarts).toBe(0);

    const [bomb, hog, filler, cleaned] = observationTexts(await system.events(hostile));
    // the bomb hit the limit (even the shell may find no process left to fork, and exit)
    expect(bomb).toMatch(/Resource temporarily unavailable|bomb-contained/);
    // never more than the limit in the hostile sandbox, plus the calm one's shell and each's two bwrap processes
    expect(mostSandboxed).toBeGreaterThan(10);
    expect(mostSandboxed).toBeLessThanOrEqual(64 + 4 + 4);
    expect(hog).toMatch(/hog exit [1-9]/);
    expect(filler).toContain('over its size quota of 64 MiB');
    expect(filler).not.toContain('filler-finished');
    expect(cleaned).toContain('cleaned');
    expect(Number(/^(\d+)$/m.exec(cleaned!)?.[1])).toBeLessThan(64);
  }, 180_000);

  it.skipIf(disks.kind === 'check')(
    'refuse an allocation past the quota inside the sandbox: 12 × fallocate 1000M against 5 GiB fail past it at once, and the host keeps its disk',
    async () => {
      await using system = await startTestSystem({ toolRunnerEnv: { FLOTILLA_SANDBOX_DISK_MB: '5120' } });
      const free = async (): Promise<number> => {
        const fs = await statfs(system.home);
        return fs.bavail * fs.bsize;
      };
      const before = await free();
      let least = before;
      const watch = setInterval(() => void free().then((bytes) => (least = Math.min(least, bytes))), 50);
      let texts: string[];
      try {
        texts = await runCommands(system, { tenant: 'acme', conversation: 'filler' }, [
          'for i in $(seq 1 12); do fallocate -l 1000M big-$i && echo "allocated $i"; done; df -B1 --output=size,used . | tail -1',
          'rm -f big-*; df -B1 --output=used . | tail -1; echo cleaned',
        ]);
      } finally {
        clearInterval(watch);
      }
      const [filled = '', cleaned = ''] = texts;
      // 4 × 1000 MiB fit in 5 GiB (less its own journal and inode tables); each one after is refused by the kernel, in the command
      expect(filled).toMatch(/allocated 1\nallocated 2\nallocated 3\nallocated 4\n/);
      expect(filled).not.toMatch(/allocated ([5-9]|1[0-2])/);
      expect(filled.match(/fallocate: fallocate failed: No space left on device/g)).toHaveLength(8);
      expect(filled).not.toContain('over its size quota'); // nothing measured it from outside
      const [size, used] = /^\s*(\d+)\s+(\d+)\s*$/m.exec(filled)!.slice(1).map(Number) as [number, number];
      const quota = 5120 * 1024 * 1024;
      expect(size).toBeLessThanOrEqual(quota);
      expect(used).toBeLessThanOrEqual(quota + 4096);
      // the host gave the workspace what it holds and no more, and has it back once the files are gone
      expect(before - least).toBeLessThan(quota + 256 * 1024 * 1024);
      expect(cleaned).toContain('cleaned');
      expect(Number(/^\s*(\d+)\s*$/m.exec(cleaned)?.[1])).toBeLessThan(64 * 1024 * 1024);
      expect(before - (await free())).toBeLessThan(256 * 1024 * 1024);
    },
    150_000,
  );

  it.skipIf(cgroups.kind === 'none')(
    'hold a sandbox’s processes to its memory together: 4 × 1.5 GB in a 2 GB sandbox are killed in it, the host never gives more, the agent reads why, and another conversation goes on',
    async () => {
      await using system = await startTestSystem({
        env: { FLOTILLA_RUNNER_LIVENESS_MS: '10000' },
        toolRunnerEnv: { FLOTILLA_SANDBOX_MEMORY_MB: '2048' },
      });
      const hostile = { tenant: 'acme', conversation: 'hogs' };
      const calm = { tenant: 'acme', conversation: 'calm-hogs' };
      const available = async (): Promise<number> =>
        Number(/^MemAvailable:\s+(\d+) kB$/m.exec(await readFile('/proc/meminfo', 'utf8'))?.[1]) * 1024;
      const before = await available();
      let least = before;
      const watch = setInterval(() => void available().then((bytes) => (least = Math.min(least, bytes))), 100);
      try {
        // the hogs print nothing: the call waits for them to end (a timeout), not for 30 s of silence, which a busy machine can reach first
        const hogs = 'for i in 1 2 3 4; do (head -c 1500M /dev/zero | tail > /dev/null) & done; wait; echo hogs-waited';
        await system.start(hostile, {
          id: 'hogs',
          steps: 2,
          calls: [
            { tool: 'terminal', input: { command: hogs, timeout: 110 } },
            { tool: 'terminal', input: { command: 'echo after-the-hogs' } },
          ],
        });
        await system.start(calm, { id: 'calm-hogs', steps: 6, sleep: 1 });
        await system.waitForStatus([hostile, calm], ['finished', 'error', 'stuck'], 120_000);
      } finally {
        clearInterval(watch);
      }
      expect(await system.status(hostile)).toBe('finished');
      expect(await system.status(calm)).toBe('finished');
      expect((await system.readEffects()).filter((line) => line.startsWith('calm-hogs '))).toHaveLength(6);
      const [hogs, after] = observationTexts(await system.events(hostile));
      expect(hogs).toMatch(
        /\[The sandbox ran out of memory \(its limit holds all its processes together\), so the kernel killed (a process|\d+ processes) in it\./,
      );
      expect(after).toContain('after-the-hogs');
      // 6 GB asked for: the host gave the sandbox its 2 GB and no more (the services' own use beside it)
      expect(before - least).toBeLessThan(2.5 * 1024 ** 3);
    },
    150_000,
  );

  it('a grep pattern that backtracks without end returns an error within its bound while the runner’s other actions complete', async () => {
    await using system = await startTestSystem({
      agent: { tools: ['terminal', 'file_editor', 'grep', 'think', 'finish'] },
    });
    const hostile = { tenant: 'acme', conversation: 'backtrack' };
    const calm = { tenant: 'acme', conversation: 'calm-grep' };
    await system.start(hostile, {
      id: 'backtrack',
      steps: 2,

      calls: [
        {
          tool: 'terminal',
          input: {
            command: `for i in $(seq 200); do printf '${'a'.repeat(40)}b\\n'; done > hostile.txt; echo written`,
          },
        },
        { tool: 'grep', input: { pattern: '(a+)+$' } },
      ],
    });
    await system.start(calm, { id: 'calm-grep', steps: 8, sleep: 1 });
    await system.waitForStatus([hostile, calm], ['finished', 'error', 'stuck'], 120_000);
    expect(await system.status(hostile)).toBe('finished');
    expect(await system.status(calm)).toBe('finished');
    const events = await system.events(hostile);
    const grep = events.find((event) => event.type === 'observation' && event.tool_name === 'grep');
    expect(grep).toMatchObject({ is_error: true });
    expect(JSON.stringify(grep)).toContain('took longer than');
    const grepStarted = events.filter((event) => event.type === 'execution_started').at(-1)!;
    const window = [Date.parse(grepStarted.timestamp), Date.parse(grep!.timestamp)] as const;
    expect(window[1] - window[0]).toBeLessThan(20_000);
    // the calm conversation's actions went on, on the same runner, while grep ran
    const calmResults = (await system.events(calm))
      .filter((event) => event.type === 'observation')
      .map((event) => Date.parse(event.timestamp));
    expect(calmResults.filter((at) => at > window[0] && at < window[1]).length).toBeGreaterThan(0);
  }, 150_000);
});

describe('a sandbox’s life', () => {
  it('an idle sandbox is stopped and comes back on the next action, and the agent is told', async () => {
    await using system = await startTestSystem({ toolRunnerEnv: { FLOTILLA_SANDBOX_IDLE_SECONDS: '1' } });
    const ref = { tenant: 'acme', conversation: 'sleepy' };
    await system.start(ref, {
      id: 'sleepy',
      steps: 2,
      latencyMs: 2_500,
      commands: [
        'export REMEMBERED=yes; sleep 300 & echo started',
        'echo "remembered=${REMEMBERED:-no}"; pgrep -c sleep || true',
      ],
    });
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 90_000);
    const [, second] = observationTexts(await system.events(ref));
    expect(second).toContain('sandbox was stopped after a while without commands');
    expect(second).toContain('remembered=no');
  }, 120_000);

  it('deleting a conversation removes its workspace, shell, sandbox and ownership entry', async () => {
    await using system = await startTestSystem({ gateway: true });
    const ref = { tenant: 'acme', conversation: 'doomed' };
    await runCommands(system, ref, ['sleep 600 & echo kept > kept.txt']);
    const workspace = join(system.home, 'workspaces', 'acme', 'doomed');
    expect(existsSync(join(workspace, 'kept.txt'))).toBe(true);
    expect(existsSync(WorkspaceDisks.imageOf(workspace))).toBe(disks.kind === 'filesystem');
    const before = await sandboxedProcesses();
    expect(before.length).toBeGreaterThan(0);
    const runners = await RunnerRegistry.open(system.nc, { livenessMs: 3_000 });
    expect((await runners.owner(ref))?.runner).toBeTruthy();

    const response = await fetch(`${system.gatewayUrl}/v1/conversations/doomed`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${system.apiKey}` },
    });
    expect(response.status).toBe(204);
    expect(existsSync(workspace)).toBe(false);
    // and its filesystem, where it had one: unmounted, its image gone
    expect(existsSync(WorkspaceDisks.imageOf(workspace))).toBe(false);
    expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(workspace);
    expect((await runners.owner(ref))?.runner ?? '').toBe(''); // purged: nobody owns it
    const deadline = Date.now() + 5_000;
    while ((await sandboxedProcesses()).length > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await sandboxedProcesses()).toEqual([]);
  }, 120_000);
});
