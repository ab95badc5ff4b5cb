import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SpawnReportFilter } from './docker-stream.js';
import { linuxSignalName, PID_MARKER, processExit, signalScript, spawnCommand } from './spawn-script.js';

// The wrapper and the signal script run in the container's /bin/sh; here they run in this
// machine's, which is the same POSIX sh the default image has (dash on Debian).

type Ran = {
  stdout: string;
  stderr: string;
  pid: number | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
};

function runWrapped(
  unset: readonly string[],
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onPid?: (pid: number) => void,
  detached = false,
): Promise<Ran> {
  const [file, ...argv] = spawnCommand(unset, command, args);
  const child = spawn(file!, argv, { env, stdio: ['ignore', 'pipe', 'pipe'], detached });
  const filter = new SpawnReportFilter();
  child.stderr.pipe(filter);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  filter.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  void filter.pid.then((pid) => pid !== undefined && onPid?.(pid));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      void filter.pid.then((pid) => resolve({ stdout, stderr, pid, code, signal }));
    });
  });
}

/** Live (not zombie) members of a process group. */
async function processGroup(pgid: number): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-e', '-o', 'pid=,pgid=,stat=']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, state]) => Number(group) === pgid && !state?.startsWith('Z'))
    .map(([member]) => Number(member));
}

describe('the spawn wrapper', () => {
  it('reports its pid first, then runs the command as that pid, leading its own process group', async () => {
    const ran = await runWrapped(
      [],
      'sh',
      ['-c', 'read -r _ _ _ _ group _ < /proc/$$/stat; echo "pid=$$ group=$group"; echo "on stderr" >&2'],
      { PATH: process.env['PATH'] },
    );
    expect(ran.code).toBe(0);
    expect(ran.pid).toBeGreaterThan(1);
    expect(ran.stdout.trim()).toBe(`pid=${ran.pid} group=${ran.pid}`);
    expect(ran.stderr).toBe('on stderr\n');
  });

  it('keeps the group it leads already (a session leader cannot call setsid again)', async () => {
    const ran = await runWrapped(
      [],
      'sh',
      ['-c', 'read -r _ _ _ _ group _ < /proc/$$/stat; echo "pid=$$ group=$group"'],
      { PATH: process.env['PATH'] },
      undefined,
      true,
    );
    expect(ran.code).toBe(0);
    expect(ran.stdout.trim()).toBe(`pid=${ran.pid} group=${ran.pid}`);
  });

  it('unsets the variables it is given and keeps the others', async () => {
    const ran = await runWrapped(['HOSTNAME', 'IMAGE_VERSION', 'not a name; rm -rf /'], 'env', [], {
      PATH: process.env['PATH'],
      HOSTNAME: 'abc123',
      IMAGE_VERSION: '1.2',
      KEEP: 'yes',
    });
    const names = ran.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(0, line.indexOf('=')));
    expect(names).toContain('KEEP');
    expect(names).not.toContain('HOSTNAME');
    expect(names).not.toContain('IMAGE_VERSION');
  });

  it('passes arguments through untouched', async () => {
    const ran = await runWrapped([], 'printf', ['%s|', 'a b', '$HOME', "it's", ''], { PATH: process.env['PATH'] });
    expect(ran.stdout).toBe("a b|$HOME|it's||");
  });

  it('keeps the exit code of the command', async () => {
    const ran = await runWrapped([], 'sh', ['-c', 'exit 7'], { PATH: process.env['PATH'] });
    expect(ran.code).toBe(7);
  });
});

describe('the signal script', () => {
  it('reaches the process and what it started', async () => {
    let pid: number | undefined;
    let finished: Ran | undefined;
    let reportPid!: () => void;
    const started = new Promise<void>((resolve) => (reportPid = resolve));
    void runWrapped(
      [],
      'sh',
      ['-c', 'sleep 300 & echo "child=$!"; wait'],
      { PATH: process.env['PATH'] },
      (reported) => {
        pid = reported;
        reportPid();
      },
    ).then((result) => (finished = result));
    await started;
    // the child is started: its pid is on stdout; wait for it to exist
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await processGroup(pid!)).length).toBeGreaterThanOrEqual(2); // sh and its sleep
    await promisify(execFile)('sh', ['-c', signalScript('TERM', pid!)]);
    const deadline = Date.now() + 5_000;
    while (finished === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(finished?.signal).toBe('SIGTERM');
    while ((await processGroup(pid!)).length > 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await processGroup(pid!)).toEqual([]);
  });

  it('refuses what is not a signal name and a pid', () => {
    expect(() => signalScript('TERM; reboot', 42)).toThrow();
    expect(() => signalScript('TERM', 1)).toThrow();
    expect(() => signalScript('TERM', Number.NaN)).toThrow();
    expect(signalScript('KILL', 42, { groupOnly: true })).toBe('kill -KILL -42 2>/dev/null; exit 0');
  });
});

describe('signals and exits', () => {
  it('names Linux signals as the shell does', () => {
    expect(linuxSignalName('SIGTERM')).toBe('TERM');
    expect(linuxSignalName('SIGIOT')).toBe('ABRT');
    expect(linuxSignalName('SIGBREAK')).toBeUndefined();
  });

  it('reports a signal this service sent as the signal, other codes as codes', () => {
    expect(processExit(143, new Set<NodeJS.Signals>(['SIGTERM']))).toEqual({ code: null, signal: 'SIGTERM' });
    expect(processExit(137, new Set<NodeJS.Signals>(['SIGTERM']))).toEqual({ code: 137, signal: null });
    expect(processExit(130, new Set())).toEqual({ code: 130, signal: null });
    expect(processExit(0, new Set<NodeJS.Signals>(['SIGINT']))).toEqual({ code: 0, signal: null });
  });

  it('marks its report so that it stays apart from output', () => {
    expect(PID_MARKER.startsWith('\x1e')).toBe(true);
  });
});
