import { execFile } from 'node:child_process';
import { existsSync, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxErrorCode } from '../errors.js';
import type { Sandbox, SandboxProvider } from '../sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode, type SandboxSettings } from '../settings.js';
import { SANDBOX_ID_LABEL } from './container-plan.js';
import { removeLeftovers, silentDockerLogger } from './docker-engine.js';
import { createDockerProvider } from './docker-provider.js';
import { expectSandboxError, lineOf, run, variablesOf } from './test-support/sandbox-probes.js';

const MiB = 1024 * 1024;

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
