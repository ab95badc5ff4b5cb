import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxStateDir } from './state-dir.js';
import { unmountWorkspacesUnder } from './workspace-disk.js';

const execute = promisify(execFile);
const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');

// a process killed during its sandbox self-test leaves the test workspace's filesystem mounted
// in its directory; removing the directory alone fails (EBUSY)
const mountable = await (async () => {
  const probe = await mkdtemp(path.join(tmpdir(), 'flotilla-state-probe-'));
  try {
    await execute('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]);
    await execute('umount', [probe]);
    return true;
  } catch {
    console.warn('state directory mount test SKIPPED: this process may not mount a tmpfs');
    return false;
  } finally {
    await rm(probe, { recursive: true, force: true });
  }
})();

describe('sandboxStateDir', () => {
  const roots: string[] = [];
  const newRoot = async (): Promise<string> => {
    const root = await mkdtemp(path.join(tmpdir(), 'flotilla-state-'));
    roots.push(root);
    return root;
  };
  afterAll(async () => {
    for (const root of roots) {
      await unmountWorkspacesUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  });

  it('makes this process its own directory and removes those of processes that are gone', async () => {
    const root = await newRoot();
    const gone = `${host}-999999999`;
    const running = `${host}-${process.ppid}`;
    for (const name of [gone, running, 'other-host-1']) await mkdir(path.join(root, name, 'etc'), { recursive: true });
    const mine = await sandboxStateDir(root);
    expect(path.basename(mine)).toBe(`${host}-${process.pid}`);
    expect((await readdir(root)).sort()).toEqual(
      [mine, path.join(root, running), path.join(root, 'other-host-1')].map((entry) => path.basename(entry)).sort(),
    );
  });

  it.skipIf(!mountable)('unmounts what a gone process left mounted in its directory, then removes it', async () => {
    const root = await newRoot();
    const workspace = path.join(root, `${host}-999999998`, 'self-test-0a1b2c3d', 'workspace');
    await mkdir(workspace, { recursive: true });
    await execute('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', workspace]);
    await writeFile(path.join(workspace, 'probe-file'), '');
    const mine = await sandboxStateDir(root);
    expect(await readdir(root)).toEqual([path.basename(mine)]);
    expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(root);
  });
});
