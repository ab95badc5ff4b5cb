import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox, SandboxProcess, SandboxProvider } from '../sandbox.js';
import { detectCgroups } from '../cgroups.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode, type SandboxSettings } from '../settings.js';
import { createBwrapProvider } from './bwrap-provider.js';
import { mayShareNetwork } from './shared-network.js';

const MiB = 1024 * 1024;

/** Run as root with CAP_SYS_ADMIN, the processes of a sandbox share its network namespace. */
const sharesNetwork = mayShareNetwork(process.getuid?.() === 0 ? { uid: 0, gid: 0 } : undefined);
if (!sharesNetwork) console.warn('bwrap shared network test SKIPPED: it needs root with CAP_SYS_ADMIN');

/** A TCP server on the sandbox's loopback that greets each connection; prints `ready` once listening. */
const GREETER = [
  'import socket',
  's = socket.socket()',
  's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
  "s.bind(('127.0.0.1', 8765))",
  's.listen()',
  "print('ready', flush=True)",
  'while True:',
  '    c, _ = s.accept()',
  "    c.sendall(b'hello from the sandbox\\n')",
  '    c.close()',
].join('\n');

async function run(
  sandbox: Sandbox,
  script: string,
  timeoutMs = 20_000,
): Promise<{ output: string; code: number | null }> {
  const child: SandboxProcess = await sandbox.spawn('bash', ['-c', script]);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { output, code: exit.code };
}

describe.each([NetworkMode.None, NetworkMode.Egress])('bwrap sandbox, network %s', (network) => {
  let root: string;
  let workspace: string;
  let sandbox: Sandbox;
  let sandboxProvider: SandboxProvider;
  /** Another conversation's sandbox on the same provider. */
  let neighbour: Sandbox;
  let server: Server;
  let port: number;
  // an operator's read-only path under the host's /tmp (where a checkout may be): seen inside, over the private /tmp
  const shared = path.join(tmpdir(), `flotilla-bwrap-shared-${process.pid}-${network}`);
  const settings: SandboxSettings = {
    ...DEFAULT_SANDBOX_SETTINGS,
    readOnlyPaths: [shared],
    network,
    limits: {
      ...DEFAULT_SANDBOX_SETTINGS.limits,
      processes: 64,
      memoryBytes: 256 * MiB,
      fileBytes: 8 * MiB,
      tmpBytes: 16 * MiB,
    },
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-bwrap-'));
    await mkdir(shared, { recursive: true });
    await writeFile(path.join(shared, 'tool.txt'), 'a shared tool');
    workspace = path.join(root, 'workspaces', 'acme', 'one');
    await mkdir(workspace, { recursive: true });
    await mkdir(path.join(root, 'workspaces', 'acme', 'two'), { recursive: true });
    await writeFile(path.join(root, 'workspaces', 'acme', 'two', 'private.txt'), 'other conversation');
    await writeFile(path.join(root, 'api-key'), 'service secret');
    server = createServer((socket) => socket.end('hello from the host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
    // with a cgroup of its own where this machine allows it, as the tool runner makes them
    const provider = createBwrapProvider(settings, {
      stateDir: path.join(root, 'state'),
      ownedRoot: root,
      cgroups: await detectCgroups(),
    });
    sandboxProvider = provider;
    await provider.selfTest();
    sandbox = await provider.open({ id: 'acme.one', workspace, env: { GREETING: 'hi there' } });
    neighbour = await provider.open({ id: 'acme.two', workspace: path.join(root, 'workspaces', 'acme', 'two') });
  });

  afterAll(async () => {
    await sandbox?.close();
    await neighbour?.close();
    server?.close();
    await rm(root, { recursive: true, force: true });
    await rm(shared, { recursive: true, force: true });
  });

  it("sees the operator's read-only paths, even under /tmp, and cannot write them", async () => {
    const { output } = await run(
      sandbox,
      `cat ${shared}/tool.txt; echo; echo x > ${shared}/evil 2>&1; echo y > /tmp/own && cat /tmp/own`,
    );
    expect(output).toContain('a shared tool');
    expect(output).toMatch(/Read-only file system|Permission denied/);
    expect(output).toContain('y');
    await expect(stat(path.join(shared, 'evil'))).rejects.toThrow();
  });

  it('builds the environment from scratch, with the spec’s variables', async () => {
    process.env['FLOTILLA_TEST_LEAK'] = 'leaked';
    const { output } = await run(sandbox, 'env');
    delete process.env['FLOTILLA_TEST_LEAK'];
    const names = output
      .trim()
      .split('\n')
      .map((line) => line.split('=')[0]);
    expect(output).toContain('GREETING=hi there');
    expect(output).not.toContain('leaked');
    expect(names.filter((name) => name?.startsWith('FLOTILLA_') || name?.startsWith('NATS'))).toEqual([]);
    expect(output).toContain('HOME=/home/agent');
  });

  it('sees its workspace at /workspace and nothing else of the host', async () => {
    const { output } = await run(
      sandbox,
      `pwd; ls /; ls ..; cat ${root}/api-key 2>&1; ls ${root} 2>&1; cat /proc/1/cmdline | tr '\\0' ' '; echo; id -un; ls /etc/ssl; test -e /etc/shadow && echo HOST"-"SHADOW; ls /etc | wc -l`,
    );
    expect(output).not.toContain('private');
    expect(output).not.toContain('HOST-SHADOW');
    expect(output).toContain('/workspace\n');
    expect(output).not.toContain('service secret');
    expect(output).not.toContain('private.txt');
    expect(output).toMatch(/No such file or directory/);
    expect(output).toContain('agent');
  });

  it('writes to the workspace reach the host; writes elsewhere do not', async () => {
    const { output } = await run(
      sandbox,
      `echo inside > /workspace/made.txt; echo x > /usr/evil 2>&1; echo y > /etc/evil 2>&1; echo z > /tmp/scratch && cat /tmp/scratch; echo w > ${root}/evil 2>&1; true`,
    );
    expect(await readFile(path.join(workspace, 'made.txt'), 'utf8')).toBe('inside\n');
    expect(output).toMatch(/Read-only file system|Permission denied|No such file/);
    await expect(stat(path.join(root, 'evil'))).rejects.toThrow();
    await expect(stat('/usr/evil')).rejects.toThrow();
    await expect(stat('/tmp/scratch')).rejects.toThrow();
  });

  it('cannot reach a port on the host’s loopback', async () => {
    const { output } = await run(
      sandbox,
      `(exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3) 2>&1; (exec 3<>/dev/tcp/10.0.2.2/${port} && cat <&3) 2>&1; echo done`,
      30_000,
    );
    expect(output).not.toContain('hello from the host');
    expect(output).toContain('done');
  });

  it.skipIf(!sharesNetwork)(
    'shares one network among its processes: a server one starts, the next reaches; another sandbox and the host do not',
    async () => {
      expect(sandboxProvider.describe().networkPerSandbox).toBe(true);
      const greeter = await sandbox.spawn('python3', ['-c', GREETER]);
      greeter.stderr.resume();
      try {
        await new Promise<void>((resolve, reject) => {
          greeter.stdout.on('data', (chunk: Buffer) => chunk.toString('utf8').includes('ready') && resolve());
          void greeter.exited.then((exit) => reject(new Error(`the server exited with ${exit.code}`)));
        });
        const probe = '(exec 3<>/dev/tcp/127.0.0.1/8765 && cat <&3) 2>&1; echo done';
        expect((await run(sandbox, probe)).output).toContain('hello from the sandbox');
        const fromNeighbour = await run(neighbour, probe);
        expect(fromNeighbour.output).toContain('done');
        expect(fromNeighbour.output).not.toContain('hello from the sandbox');
        const fromHost = await new Promise<string>((resolve) => {
          let heard = '';
          const socket = createConnection({ host: '127.0.0.1', port: 8765 });
          socket.on('data', (chunk: Buffer) => (heard += chunk.toString('utf8')));
          socket.on('error', () => resolve(heard));
          socket.on('close', () => resolve(heard));
        });
        expect(fromHost).not.toContain('hello from the sandbox');
      } finally {
        greeter.signal('SIGKILL');
        await greeter.exited;
      }
    },
  );

  it('shows no host path in what its processes can read of bwrap (its pid 1’s command line)', async () => {
    const { output } = await run(sandbox, 'tr "\\0" " " < /proc/1/cmdline; echo');
    expect(output).toMatch(/^bwrap --args \d+ -- /);
    expect(output).not.toContain(root);
    expect(output).not.toContain('/state');
  });

  it('contains a fork bomb by its process limit; the other sandboxes go on', async () => {
    const bomb = await sandbox.spawn('bash', ['-c', 'bomb() { bomb | bomb & }; bomb; sleep 30']);
    bomb.stdout.resume();
    bomb.stderr.resume();
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const inGroup = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
      const members = await Promise.all(
        inGroup.map((pid) =>
          readFile(`/proc/${pid}/stat`, 'utf8').then(
            (stat) => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2],
            () => '',
          ),
        ),
      );
      const count = members.filter((pgid) => pgid === String(bomb.pid)).length;
      // bwrap's monitor and its pid 1 are in the group too, outside the sandbox's own count
      expect(count).toBeGreaterThan(10);
      expect(count).toBeLessThanOrEqual(64 + 2);
      expect(await run(neighbour, 'echo still fine')).toMatchObject({ output: 'still fine\n' });
    } finally {
      bomb.signal('SIGKILL');
      await bomb.exited;
    }
  });

  it('contains a memory hog by its memory limit', async () => {
    const { output, code } = await run(
      sandbox,
      'python3 -c "b = bytearray(1024 * 1024 * 1024); print(len(b))" 2>&1 || perl -e \'$x = "a" x (1024*1024*1024); print length($x)\' 2>&1; echo rc=$?',
    );
    expect(output).not.toContain('1073741824');
    expect(code).toBe(0);
  });

  it('stops a file larger than its file limit', async () => {
    const { output } = await run(
      sandbox,
      'head -c 20000000 /dev/zero > /workspace/big 2>&1; echo rc=$?; stat -c %s /workspace/big',
    );
    expect(output).toMatch(/rc=(1|153)/);
    expect(Number(output.trim().split('\n').pop())).toBeLessThanOrEqual(8 * MiB);
  });

  it('a signal reaches everything the process started', async () => {
    const child = await sandbox.spawn('bash', ['-c', 'sleep 300 & sleep 301 & wait']);
    child.stdout.resume();
    child.stderr.resume();
    child.signal('SIGTERM');
    const exit = await child.exited;
    expect(exit.code === null || exit.code > 0).toBe(true);
  });
});
