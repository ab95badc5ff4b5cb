import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxErrorCode } from '../errors.js';
import type { Sandbox } from '../sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode, type SandboxSettings } from '../settings.js';
import { containerName, SANDBOX_ID_LABEL, SANDBOX_LABEL, SANDBOX_OWNER_LABEL } from './container-plan.js';
import { removeLeftovers, silentDockerLogger } from './docker-engine.js';
import { createDockerProvider } from './docker-provider.js';
import { FakeEngine } from './test-support/fake-engine.js';
import { expectSandboxError, lineOf, run, variablesOf } from './test-support/sandbox-probes.js';

/** Whether a local pid is a live process (a zombie waiting for its reaper is not). */
async function isAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
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
        networkPerSandbox: true,
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
