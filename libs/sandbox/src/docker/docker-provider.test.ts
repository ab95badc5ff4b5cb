import { execFile } from 'node:child_process';
import { existsSync, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSandboxError, SandboxErrorCode } from '../errors.js';
import type { Sandbox, SandboxProcess, SandboxProvider } from '../sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode, type SandboxSettings } from '../settings.js';
import { containerName, SANDBOX_ID_LABEL, SANDBOX_LABEL, SANDBOX_OWNER_LABEL } from './container-plan.js';
import { removeLeftovers, silentDockerLogger } from './docker-engine.js';
import { createDockerProvider } from './docker-provider.js';
import { FakeEngine } from './test-support/fake-engine.js';

const MiB = 1024 * 1024;

/** Variables a shell adds on its own (they are not leaks from the service). */
const SHELL_VARIABLES = new Set(['PWD', 'OLDPWD', 'SHLVL', '_']);

async function run(
  sandbox: Sandbox,
  script: string,
  options: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }> {
  const child: SandboxProcess = await sandbox.spawn('bash', ['-c', script], options.env ? { env: options.env } : {});
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), options.timeoutMs ?? 20_000);
  const exit = await child.exited;
  clearTimeout(timer);
  return { stdout, stderr, ...exit };
}

/** Resolves with the first stdout line matching `pattern`. */
function lineOf(child: SandboxProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within 10 s (saw: ${text})`)), 10_000);
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = pattern.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

function variablesOf(envOutput: string): Record<string, string> {
  return Object.fromEntries(
    envOutput
      .split('\n')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])
      .filter(([name]) => !SHELL_VARIABLES.has(name!)),
  );
}

/** Whether a local pid is a live process (a zombie waiting for its reaper is not). */
async function isAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

async function expectSandboxError(promise: Promise<unknown>, code: SandboxErrorCode, pattern: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(isSandboxError(error), `expected a SandboxError, got ${String(error)}`).toBe(true);
  expect((error as { code: string }).code).toBe(code);
  expect((error as Error).message).toMatch(pattern);
}

// ---------------------------------------------------------------------------------------------
// The provider's own logic against a stand-in engine whose execs are local processes: always runs.
// ---------------------------------------------------------------------------------------------

describe('docker sandbox provider (stand-in engine)', () => {
  let root: string;
  let workspace: string;
  const settings: SandboxSettings = { ...DEFAULT_SANDBOX_SETTINGS, kind: 'docker' };

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-docker-fake-'));
    workspace = path.join(root, 'workspaces', 'acme', 'one');
    await mkdir(workspace, { recursive: true });
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('makes one labelled, confined container per conversation', async () => {
    const engine = new FakeEngine();
    const provider = createDockerProvider(settings, { docker: engine.client, owner: 'runner-7' });
    const sandbox = await provider.open({ id: 'acme.one', workspace, env: { API_TOKEN: 'secret-value' } });
    try {
      const created = engine.created[0]!;
      expect(created.name).toMatch(/^flotilla-sbx-acme\.one-[0-9a-f]{12}$/);
      expect(created.name).not.toBe(containerName('acme.one', 'runner-8'));
      expect(created.Labels).toEqual({
        [SANDBOX_LABEL]: '1',
        [SANDBOX_ID_LABEL]: 'acme.one',
        [SANDBOX_OWNER_LABEL]: 'runner-7',
      });
      expect(created.HostConfig?.NetworkMode).toBe('none');
      expect(created.HostConfig?.Mounts?.[0]?.Source).toBe(workspace);
      expect(JSON.stringify(created)).not.toContain('secret-value');
      const uid = process.getuid!();
      expect(created.User).toBe(uid === 0 ? `${settings.uid}:${settings.gid}` : `${uid}:${process.getgid!()}`);
      expect(sandbox.owner).toEqual(uid === 0 ? { uid: settings.uid, gid: settings.gid } : undefined);
      expect(sandbox.workspacePath).toBe('/workspace');
      expect(sandbox.toInside(path.join(workspace, 'src', 'a.ts'))).toBe('/workspace/src/a.ts');
      expect(provider.describe()).toEqual({
        kind: 'docker',
        network: 'none',
        isolated: true,
        limits: settings.limits,
        enforcement: 'docker (cgroups)',
        disk: { kind: 'checked', reason: expect.stringContaining('docker kind') },
      });
    } finally {
      await sandbox.close();
    }
  });

  it('creates the egress network once, with no traffic between its containers', async () => {
    const engine = new FakeEngine();
    const provider = createDockerProvider({ ...settings, network: NetworkMode.Egress }, { docker: engine.client });
    const [first, second] = await Promise.all([
      provider.open({ id: 'acme.one', workspace }),
      provider.open({ id: 'acme.two', workspace }),
    ]);
    await Promise.all([first.close(), second.close()]);
    expect([...engine.networks.keys()]).toEqual(['flotilla-sandbox-egress']);
    expect(engine.networks.get('flotilla-sandbox-egress')?.Options?.['com.docker.network.bridge.enable_icc']).toBe(
      'false',
    );
    expect(engine.created.map((options) => options.HostConfig?.NetworkMode)).toEqual([
      'flotilla-sandbox-egress',
      'flotilla-sandbox-egress',
    ]);
  });

  describe('processes', () => {
    const engine = new FakeEngine();
    let sandbox: Sandbox;

    beforeAll(async () => {
      sandbox = await createDockerProvider(settings, { docker: engine.client }).open({
        id: 'acme.one',
        workspace,
        env: { GREETING: 'hi there' },
      });
    });

    afterAll(async () => {
      await sandbox?.close();
    });

    it("builds the environment from scratch: the image's and the engine's variables are unset", async () => {
      const { stdout, code } = await run(sandbox, 'env', { env: { EXTRA: 'for this process' } });
      expect(code).toBe(0);
      const variables = variablesOf(stdout);
      expect(Object.keys(variables).sort()).toEqual([
        'EXTRA',
        'GIT_PAGER',
        'GREETING',
        'HOME',
        'LANG',
        'PAGER',
        'PATH',
        'TERM',
      ]);
      expect(variables['GREETING']).toBe('hi there');
      expect(variables['HOME']).toBe('/home/agent');
    });

    it('drives a process through its pipes; stderr carries only what the process wrote', async () => {
      const child = await sandbox.spawn('sh', ['-c', 'cat; echo "done" >&2; exit 3']);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      child.stdin.write('line one\n');
      child.stdin.end('line two\n');
      expect(await child.exited).toEqual({ code: 3, signal: null });
      expect(child.hasExited).toBe(true);
      expect(stdout).toBe('line one\nline two\n');
      expect(stderr).toBe('done\n');
    });

    it('delivers a signal to the process and what it started', async () => {
      const child = await sandbox.spawn('bash', [
        '-c',
        'trap "echo parent-got-term" TERM; sleep 300 & child=$!; echo "child=$child"; while kill -0 "$child" 2>/dev/null; do sleep 0.05; done; echo child-gone',
      ]);
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.resume();
      await lineOf(child, /child=(\d+)/);
      child.signal('SIGTERM');
      const exit = await child.exited;
      expect(stdout).toContain('parent-got-term');
      expect(stdout).toContain('child-gone');
      expect(exit).toEqual({ code: 0, signal: null });
    });

    it('reports a process killed by the signal it was sent as that signal', async () => {
      const child = await sandbox.spawn('sleep', ['300']);
      child.stdout.resume();
      child.stderr.resume();
      child.signal('SIGTERM');
      expect(await child.exited).toEqual({ code: null, signal: 'SIGTERM' });
    });

    it('ends what a process started when it exits', async () => {
      const { stdout, code } = await run(sandbox, 'sleep 300 & echo "$!"');
      expect(code).toBe(0);
      const orphan = Number(stdout.trim());
      expect(orphan).toBeGreaterThan(1);
      // killed by the time the exit is reported; the kernel may take a moment to show it gone on a loaded machine
      const deadline = Date.now() + 2_000;
      while ((await isAlive(orphan)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(await isAlive(orphan)).toBe(false);
    });
  });

  it('close removes the container and kills what runs in it; the sandbox is closed after', async () => {
    const engine = new FakeEngine();
    const sandbox = await createDockerProvider(settings, { docker: engine.client }).open({ id: 'acme.one', workspace });
    const child = await sandbox.spawn('sleep', ['300']);
    child.stdout.resume();
    child.stderr.resume();
    await sandbox.close();
    expect(engine.containers.size).toBe(0);
    expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await expectSandboxError(sandbox.spawn('true', []), SandboxErrorCode.Closed, /closed/);
  });

  it("replaces the container it left for a conversation, and leaves other owners' alone", async () => {
    const engine = new FakeEngine();
    const before = await createDockerProvider(settings, { docker: engine.client, owner: 'runner-0' }).open({
      id: 'acme.one',
      workspace,
    });
    const elsewhere = await createDockerProvider(settings, { docker: engine.client, owner: 'runner-1' }).open({
      id: 'acme.one',
      workspace,
    });
    // runner-0 restarted (same owner, e.g. a StatefulSet pod): its old container goes
    const after = await createDockerProvider(settings, { docker: engine.client, owner: 'runner-0' }).open({
      id: 'acme.one',
      workspace,
    });
    expect(engine.containers.size).toBe(2);
    await expectSandboxError(before.spawn('true', []), SandboxErrorCode.Closed, /gone|closed/);
    expect((await run(elsewhere, 'echo alive')).stdout).toBe('alive\n');
    await Promise.all([after.close(), elsewhere.close()]);
  });

  it('removes the leftovers of its own owner only', async () => {
    const engine = new FakeEngine();
    await createDockerProvider(settings, { docker: engine.client, owner: 'runner-a' }).open({
      id: 'acme.one',
      workspace,
    });
    await createDockerProvider(settings, { docker: engine.client, owner: 'runner-b' }).open({
      id: 'acme.two',
      workspace,
    });
    expect(await removeLeftovers(engine.client, 'runner-a', silentDockerLogger)).toBe(1);
    expect([...engine.containers.values()].map((container) => container.labels[SANDBOX_OWNER_LABEL])).toEqual([
      'runner-b',
    ]);
  });

  it('says what to do when no engine answers', async () => {
    const engine = new FakeEngine();
    engine.pingFails = true;
    await expectSandboxError(
      createDockerProvider(settings, { docker: engine.client }).selfTest(),
      SandboxErrorCode.Unavailable,
      /DOCKER_HOST.*socket/s,
    );
  });

  it('pulls a missing image, and names it when that fails', async () => {
    const engine = new FakeEngine();
    const pulled = await createDockerProvider(
      { ...settings, image: 'example/tools:1' },
      { docker: engine.client },
    ).open({ id: 'acme.one', workspace });
    await pulled.close();
    expect(engine.images.has('example/tools:1')).toBe(true);
    engine.pullFails = true;
    await expectSandboxError(
      createDockerProvider({ ...settings, image: 'example/missing:1' }, { docker: engine.client }).open({
        id: 'acme.one',
        workspace,
      }),
      SandboxErrorCode.Unavailable,
      /example\/missing:1.*FLOTILLA_SANDBOX_IMAGE/s,
    );
  });

  it('explains a workspace the engine cannot see', async () => {
    const engine = new FakeEngine();
    const provider = createDockerProvider(settings, {
      docker: engine.client,
      hostPath: (servicePath) => path.join('/nowhere-on-the-engine-host', servicePath),
    });
    await expectSandboxError(
      provider.open({ id: 'acme.one', workspace }),
      SandboxErrorCode.Unavailable,
      /cannot see the workspace \/nowhere-on-the-engine-host/,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// A real Docker engine: runs where one is reachable (DOCKER_HOST or the default socket), with the
// image present or pullable; skipped otherwise. The workspaces live under the system's temp
// directory, which the engine must see at the same path (set FLOTILLA_TEST_DOCKER_SCRATCH to a
// directory shared with the engine's host otherwise, e.g. when tests run in a container).
// ---------------------------------------------------------------------------------------------

const IMAGE = process.env['FLOTILLA_TEST_SANDBOX_IMAGE'] || DEFAULT_SANDBOX_SETTINGS.image;

async function engineAvailability(): Promise<{ ready: true } | { ready: false; why: string }> {
  const docker = new Dockerode();
  const within = <T>(ms: number, promise: Promise<T>): Promise<T> =>
    Promise.race([
      promise,
      new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref()),
    ]);
  try {
    await within(2_000, docker.ping());
  } catch (error) {
    return {
      ready: false,
      why: `no Docker engine is reachable (${(error as Error).message}); set DOCKER_HOST to run them`,
    };
  }
  try {
    await docker.getImage(IMAGE).inspect();
    return { ready: true };
  } catch {
    // not there yet: try to pull it
  }
  try {
    const progress = await within(10_000, docker.pull(IMAGE));
    await within(
      180_000,
      new Promise<void>((resolve, reject) =>
        docker.modem.followProgress(progress, (error: unknown) => (error ? reject(error as Error) : resolve())),
      ),
    );
    await docker.getImage(IMAGE).inspect();
    return { ready: true };
  } catch (error) {
    return {
      ready: false,
      why: `the image ${IMAGE} is not on the engine and could not be pulled (${(error as Error).message}); set FLOTILLA_TEST_SANDBOX_IMAGE to one it has`,
    };
  }
}

const availability = await engineAvailability();
if (!availability.ready) console.warn(`[docker sandbox] skipping the tests against a real engine: ${availability.why}`);

describe.skipIf(!availability.ready).each([NetworkMode.None, NetworkMode.Egress])(
  'docker sandbox on a real engine, network %s',
  (network) => {
    const docker = new Dockerode();
    const owner = `flotilla-test-${process.pid}-${network}`;
    const settings: SandboxSettings = {
      ...DEFAULT_SANDBOX_SETTINGS,
      kind: 'docker',
      image: IMAGE,
      network,
      limits: {
        ...DEFAULT_SANDBOX_SETTINGS.limits,
        processes: 32,
        memoryBytes: 256 * MiB,
        fileBytes: 8 * MiB,
        tmpBytes: 16 * MiB,
      },
    };
    let root: string;
    let workspace: string;
    let provider: SandboxProvider;
    let sandbox: Sandbox;

    beforeAll(async () => {
      const scratch = process.env['FLOTILLA_TEST_DOCKER_SCRATCH'] || tmpdir();
      await mkdir(scratch, { recursive: true });
      root = await mkdtemp(path.join(scratch, 'flotilla-docker-'));
      workspace = path.join(root, 'workspaces', 'acme', 'one');
      await mkdir(workspace, { recursive: true });
      process.env['FLOTILLA_TEST_LEAK'] = 'leaked';
      provider = createDockerProvider(settings, {
        docker,
        owner,
        stateDir: path.join(root, 'state'),
        natsUrl: 'nats://127.0.0.1:4222',
      });
      await provider.selfTest();
      sandbox = await provider.open({ id: `acme.one.${network}`, workspace, env: { GREETING: 'hi there' } });
    }, 240_000);

    afterAll(async () => {
      delete process.env['FLOTILLA_TEST_LEAK'];
      await sandbox?.close();
      await removeLeftovers(docker, owner, silentDockerLogger).catch(() => undefined);
      if (root) await rm(root, { recursive: true, force: true });
    });

    it("builds the environment from scratch, with the spec's variables", async () => {
      const { stdout, code } = await run(sandbox, 'env');
      expect(code).toBe(0);
      const variables = variablesOf(stdout);
      expect(Object.keys(variables).sort()).toEqual(['GIT_PAGER', 'GREETING', 'HOME', 'LANG', 'PAGER', 'PATH', 'TERM']);
      expect(variables['GREETING']).toBe('hi there');
      expect(stdout).not.toContain('leaked');
    });

    it('keeps what is written outside /workspace inside the container, and the root read-only', async () => {
      const marker = `flotilla-outside-${process.pid}-${Date.now()}`;
      const { stdout } = await run(
        sandbox,
        `echo x > /tmp/${marker} && echo tmp=ok; echo x > "$HOME/${marker}" && echo home=ok; (echo x > /${marker}) 2>/dev/null && echo root=writable || echo root=read-only; (echo x > /etc/${marker}) 2>/dev/null && echo etc=writable || echo etc=read-only`,
      );
      expect(stdout).toContain('tmp=ok');
      expect(stdout).toContain('home=ok');
      expect(stdout).toContain('root=read-only');
      expect(stdout).toContain('etc=read-only');
      expect(existsSync(path.join('/tmp', marker))).toBe(false);
      expect(existsSync(path.join(tmpdir(), marker))).toBe(false);
      expect(existsSync(path.join('/', marker))).toBe(false);
    });

    it('shares the workspace with the host, FIFOs included', async () => {
      await writeFile(path.join(workspace, 'from-host.txt'), 'written by the host\n');
      const { stdout } = await run(
        sandbox,
        'cat /workspace/from-host.txt; echo "written inside" > /workspace/from-inside.txt; pwd',
      );
      expect(stdout).toContain('written by the host');
      expect(stdout).toContain('/workspace');
      expect(await readFile(path.join(workspace, 'from-inside.txt'), 'utf8')).toBe('written inside\n');

      // the terminal tool's shell reads commands from a FIFO the service made in the workspace
      const fifo = path.join(workspace, 'commands.fifo');
      await promisify(execFile)('mkfifo', ['-m', '0666', fifo]);
      const reader = await sandbox.spawn('cat', ['/workspace/commands.fifo']);
      let read = '';
      reader.stdout.on('data', (chunk: Buffer) => (read += chunk.toString('utf8')));
      reader.stderr.resume();
      reader.stdin.end();
      const writer = createWriteStream(fifo);
      writer.end('through the fifo\n');
      const exit = await Promise.race([
        reader.exited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000)),
      ]);
      if (exit === undefined) reader.signal('SIGKILL');
      expect(exit).toEqual({ code: 0, signal: null });
      expect(read).toBe('through the fifo\n');
    });

    it('limits processes (the cgroup), CPU seconds and file size (rlimits)', async () => {
      const limits = await run(
        sandbox,
        'cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max; ulimit -t',
      );
      expect(limits.stdout.split('\n').slice(0, 2)).toEqual([
        String(settings.limits.processes),
        String(settings.limits.cpuSeconds),
      ]);
      const big = await run(
        sandbox,
        `head -c ${settings.limits.fileBytes + MiB} /dev/zero > /workspace/big; echo "status=$?"; rm -f /workspace/big`,
      );
      expect(big.stdout).toMatch(/status=(153|1)\b/); // SIGXFSZ (128 + 25), or a write error
      // in a sandbox of its own, closed after: a full process table would block the next execs
      const crowded = await provider.open({ id: `acme.crowded.${network}`, workspace });
      try {
        // dash does not retry a failed fork: past the limit it fails at once
        const forks = await run(
          crowded,
          'sh -c \'i=0; while [ $i -lt 100 ]; do sleep 30 & i=$((i+1)); done; echo "started all"\'',
        );
        expect(forks.stdout).not.toContain('started all');
        expect(`${forks.stdout}${forks.stderr}`).toMatch(/fork|resource temporarily unavailable/i);
      } finally {
        await crowded.close();
      }
    });

    it('delivers a signal to the process and what it started', async () => {
      const child = await sandbox.spawn('bash', [
        '-c',
        'trap "echo parent-got-term" TERM; sleep 300 & child=$!; echo "child=$child"; while kill -0 "$child" 2>/dev/null; do sleep 0.1; done; echo child-gone',
      ]);
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.resume();
      child.stdin.end();
      await lineOf(child, /child=\d+/);
      child.signal('SIGTERM');
      const exit = await Promise.race([
        child.exited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000)),
      ]);
      if (exit === undefined) child.signal('SIGKILL');
      expect(stdout).toContain('parent-got-term');
      expect(stdout).toContain('child-gone');
      expect(exit).toEqual({ code: 0, signal: null });

      const sleeper = await sandbox.spawn('sleep', ['300']);
      sleeper.stdout.resume();
      sleeper.stderr.resume();
      sleeper.signal('SIGTERM');
      expect(await sleeper.exited).toEqual({ code: null, signal: 'SIGTERM' });
    });

    it('close removes the container', async () => {
      const closing = await provider.open({ id: `acme.closing.${network}`, workspace });
      const running = await closing.spawn('sleep', ['300']);
      running.stdout.resume();
      running.stderr.resume();
      const [container] = await docker.listContainers({
        all: true,
        filters: { label: [`${SANDBOX_ID_LABEL}=acme.closing.${network}`] },
      });
      expect(container).toBeDefined();
      await closing.close();
      expect(await running.exited).toMatchObject({ code: null });
      const status = await docker
        .getContainer(container!.Id)
        .inspect()
        .then(
          () => 200,
          (error: { statusCode?: number }) => error.statusCode,
        );
      expect(status).toBe(404);
      await expectSandboxError(closing.spawn('true', []), SandboxErrorCode.Closed, /closed/);
    });
  },
);
