import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sandboxStateDir } from './state-dir.js';

describe('sandboxStateDir', () => {
  let root: string;
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('makes this process its own directory and removes those of processes that are gone', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-state-'));
    const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
    const gone = `${host}-999999999`;
    const running = `${host}-${process.ppid}`;
    for (const name of [gone, running, 'other-host-1']) await mkdir(path.join(root, name, 'etc'), { recursive: true });
    const mine = await sandboxStateDir(root);
    expect(path.basename(mine)).toBe(`${host}-${process.pid}`);
    expect((await readdir(root)).sort()).toEqual(
      [mine, path.join(root, running), path.join(root, 'other-host-1')].map((entry) => path.basename(entry)).sort(),
    );
  });
});
