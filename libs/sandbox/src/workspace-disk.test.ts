import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBwrapProvider } from './bwrap/bwrap-provider.js';
import type { Sandbox, SandboxProvider } from './sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, type SandboxSettings } from './settings.js';
import {
  detectWorkspaceDisks,
  DiskLimit,
  unmountWorkspacesUnder,
  WorkspaceDisks,
  type DiskSupport,
} from './workspace-disk.js';

const execute = promisify(execFile);
const MiB = 1024 * 1024;
const QUOTA = 16 * MiB;
const OWNER = { uid: DEFAULT_SANDBOX_SETTINGS.uid, gid: DEFAULT_SANDBOX_SETTINGS.gid };

const scratch = await mkdtemp(path.join(tmpdir(), 'flotilla-disk-'));
const support: DiskSupport = await detectWorkspaceDisks(DiskLimit.Auto, scratch, { bytes: QUOTA, owner: OWNER });
if (support.kind === 'check') console.warn(`workspace filesystem tests SKIPPED: ${support.reason}`);
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('choosing how the quota is held', () => {
  it('is the check from outside when asked for, and refuses `filesystem` where it cannot mount, saying why', async () => {
    expect(await detectWorkspaceDisks(DiskLimit.Check, scratch, { bytes: QUOTA, owner: OWNER })).toEqual({
      kind: 'check',
      reason: 'FLOTILLA_SANDBOX_DISK_LIMIT=check',
    });
    if (support.kind === 'check')
      await expect(detectWorkspaceDisks(DiskLimit.Filesystem, scratch, { bytes: QUOTA, owner: OWNER })).rejects.toThrow(
        /FLOTILLA_SANDBOX_DISK_LIMIT=filesystem/,
      );
    else
      expect((await detectWorkspaceDisks(DiskLimit.Filesystem, scratch, { bytes: QUOTA, owner: OWNER })).kind).toBe(
        'filesystem',
      );
  });
});

describe.skipIf(support.kind === 'check')('a workspace as a filesystem of its own', () => {
  let root: string;
  let disks: WorkspaceDisks;
  let count = 0;
  const workspace = async (): Promise<string> => {
    const directory = path.join(root, 'acme', `c${(count += 1)}`);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    return directory;
  };

  beforeAll(async () => {
    root = await mkdtemp(path.join(scratch, 'workspaces-'));
    disks = new WorkspaceDisks({ bytes: QUOTA, owner: OWNER, workspaces: root });
  });
  afterEach(async () => {
    await disks.settle();
    await unmountWorkspacesUnder(root);
  });

  it('is mounted once when two runners (or two conversations sharing it) ask at the same time, each told it is a filesystem', async () => {
    const directory = await workspace();
    expect(await disks.ensure(directory, true)).toBe('filesystem');
    await unmountWorkspacesUnder(root);
    // the image is there, unmounted: several ask at once, each with a view of its own
    const others = Array.from(
      { length: 4 },
      () => new WorkspaceDisks({ bytes: QUOTA, owner: OWNER, workspaces: root }),
    );
    expect(await Promise.all(others.map((other, index) => other.ensure(directory, index % 2 === 0)))).toEqual([
      'filesystem',
      'filesystem',
      'filesystem',
      'filesystem',
    ]);
    const { stdout } = await execute('findmnt', ['-n', '-o', 'TARGET', '--target', directory]);
    expect(stdout.trim()).toBe(directory);
    const mounts = (await execute('findmnt', ['-n', '-l', '-o', 'TARGET'])).stdout
      .split('\n')
      .filter((line) => line.trim() === directory);
    expect(mounts).toHaveLength(1);
  });

  it('is as large as the quota, its owner’s alone, with nothing in it; its image is sparse and only root’s', async () => {
    const directory = await workspace();
    expect(await disks.ensure(directory, true)).toBe('filesystem');
    const fs = await statfs(directory);
    expect(fs.bavail * fs.bsize).toBeGreaterThan(QUOTA * 0.8); // a small filesystem's own metadata takes more of it than a large one's
    expect(fs.blocks * fs.bsize).toBeLessThanOrEqual(QUOTA);
    const own = await stat(directory);
    expect({ uid: own.uid, gid: own.gid, mode: own.mode & 0o777 }).toEqual({ ...OWNER, mode: 0o700 });
    expect(await readdir(directory)).toEqual([]);
    const image = await stat(WorkspaceDisks.imageOf(directory));
    expect(image.mode & 0o777).toBe(0o600);
    expect(image.blocks * 512).toBeLessThan(QUOTA / 2);
  });

  it('takes a new workspace’s filesystem from the spares made ahead, and makes them again', async () => {
    const first = await workspace();
    await disks.ensure(first, true);
    await disks.settle();
    const spares = path.join(root, '.disk-spares');
    const ready = await readdir(spares);
    expect(ready).toHaveLength(2);
    const inodes = new Set(await Promise.all(ready.map(async (name) => (await stat(path.join(spares, name))).ino)));
    const second = await workspace();
    expect(await disks.ensure(second, true)).toBe('filesystem');
    expect(inodes.has((await stat(WorkspaceDisks.imageOf(second))).ino)).toBe(true);
    expect(await readdir(second)).toEqual([]);
    expect((await stat(second)).mode & 0o777).toBe(0o700);
    await disks.settle();
    expect(await readdir(spares)).toHaveLength(2);
  });

  it('refuses an allocation past the quota at once (ENOSPC), and holds no more than the quota', async () => {
    const directory = await workspace();
    await disks.ensure(directory, true);
    const results: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      results.push(
        await execute('fallocate', ['-l', '6M', path.join(directory, `big-${index}`)]).then(
          () => 'ok',
          (error: { stderr: string }) => error.stderr,
        ),
      );
    }
    expect(results.slice(0, 2)).toEqual(['ok', 'ok']);
    expect(results.slice(2).every((result) => /No space left on device/.test(result))).toBe(true);
    const fs = await statfs(directory);
    expect((fs.blocks - fs.bfree) * fs.bsize).toBeLessThanOrEqual(QUOTA);
  });

  it('refuses a file past its inodes too (many small files)', async () => {
    const directory = await workspace();
    await disks.ensure(directory, true);
    const { files } = await statfs(directory);
    let refused: string | undefined;
    for (let index = 0; index <= files && refused === undefined; index += 1) {
      await writeFile(path.join(directory, `f${index}`), '').catch(
        (error: NodeJS.ErrnoException) => (refused = error.code),
      );
    }
    expect(refused).toBe('ENOSPC');
  });

  it('is made only when asked to, before the first write; mounted again with its files after an unmount, by a new instance (a restarted runner)', async () => {
    const directory = await workspace();
    expect(await disks.ensure(directory, false)).toBeUndefined();
    await expect(stat(WorkspaceDisks.imageOf(directory))).rejects.toThrow();
    expect(await disks.ensure(directory, true)).toBe('filesystem');
    await writeFile(path.join(directory, 'kept.txt'), 'kept');
    expect(await disks.ensure(directory, true)).toBe('filesystem');
    expect(await unmountWorkspacesUnder(root)).toBe(1);
    expect(await readdir(directory)).toEqual([]);
    const again = new WorkspaceDisks({ bytes: QUOTA, owner: OWNER });
    expect(await again.ensure(directory, false)).toBe('filesystem');
    expect(await readdir(directory)).toEqual(['kept.txt']);
  });

  it('shares one filesystem with a runner in another mount namespace (never two over one image)', async () => {
    const directory = await workspace();
    await disks.ensure(directory, true);
    // a sibling runner, in a mount namespace of its own, mounts the same workspace while this one holds it
    const sibling = `
      const { WorkspaceDisks } = await import(${JSON.stringify(path.join(path.dirname(fileURLToPath(import.meta.url)), 'workspace-disk.ts'))});
      const disks = new WorkspaceDisks({ bytes: ${QUOTA}, owner: ${JSON.stringify(OWNER)} });
      await disks.ensure(${JSON.stringify(directory)}, true);
      (await import('node:fs')).writeFileSync(${JSON.stringify(path.join(directory, 'from-sibling'))}, 'hello');`;
    await execute('unshare', [
      '--mount',
      '--propagation',
      'private',
      '--',
      process.execPath,
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      sibling,
    ]);
    expect(await readdir(directory)).toContain('from-sibling');
    const { stdout } = await execute('losetup', ['-j', WorkspaceDisks.imageOf(directory)]);
    expect(stdout.trim().split('\n')).toHaveLength(1);
  });

  it('leaves a workspace that already holds files (made without the limit) as it is, checked', async () => {
    const directory = await workspace();
    await writeFile(path.join(directory, 'old.txt'), 'from before');
    expect(await disks.ensure(directory, true)).toBe('checked');
    expect(await readdir(directory)).toEqual(['old.txt']);
    await expect(stat(WorkspaceDisks.imageOf(directory))).rejects.toThrow();
  });

  it('is unmounted and its image removed when the workspace is deleted', async () => {
    const directory = await workspace();
    await disks.ensure(directory, true);
    await writeFile(path.join(directory, 'x'), 'x');
    await disks.remove(directory);
    await rm(directory, { recursive: true });
    await expect(stat(WorkspaceDisks.imageOf(directory))).rejects.toThrow();
  });
});

describe.skipIf(support.kind === 'check')('inside a sandbox', () => {
  let root: string;
  let provider: SandboxProvider;
  const settings: SandboxSettings = {
    ...DEFAULT_SANDBOX_SETTINGS,
    limits: { ...DEFAULT_SANDBOX_SETTINGS.limits, workspaceBytes: QUOTA },
  };

  async function run(sandbox: Sandbox, script: string): Promise<string> {
    const child = await sandbox.spawn('bash', ['-c', script]);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stdin.end();
    await child.exited;
    return output;
  }

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-disk-sandbox-'));
    const disks = await detectWorkspaceDisks(DiskLimit.Auto, root, { bytes: QUOTA, owner: OWNER });
    provider = createBwrapProvider(settings, { stateDir: path.join(root, 'state'), ownedRoot: root, disks });
  });
  afterAll(async () => {
    await unmountWorkspacesUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('a write past the quota fails in the command itself, with its own message', async () => {
    const directory = path.join(root, 'workspaces', 'acme', 'c1');
    await mkdir(directory, { recursive: true });
    const sandbox = await provider.open({ id: 'acme.c1', workspace: directory });
    // nothing written yet: none made; the first process makes it
    expect(sandbox.diskLimited).toBe(false);
    await expect(stat(WorkspaceDisks.imageOf(directory))).rejects.toThrow();
    const output = await run(
      sandbox,
      'for i in 1 2 3 4; do fallocate -l 6M big-$i && echo "allocated $i"; done; dd if=/dev/zero of=tail bs=1M count=8 2>&1 | head -1; ls -A',
    );
    expect(sandbox.diskLimited).toBe(true);
    await sandbox.close();
    expect(output).toMatch(/allocated 1\nallocated 2\n/);
    expect(output).not.toMatch(/allocated [34]/);
    expect(output).toMatch(/fallocate: fallocate failed: No space left on device/);
    expect(output).toMatch(/dd: error writing 'tail': No space left on device/);
    expect(output).not.toMatch(/lost\+found/);
    await provider.releaseWorkspace?.(directory);
  });
});
