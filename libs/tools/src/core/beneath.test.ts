import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readBeneath, removeBeneath, writeBeneath } from './beneath.js';
import { openWorkspace } from './workspace.js';

describe('file operations that follow no swapped symlink', () => {
  let root: string;
  let workspace: string;
  let outside: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-beneath-'));
    workspace = path.join(root, 'workspace');
    outside = path.join(root, 'outside');
    await mkdir(path.join(workspace, 'dir'), { recursive: true });
    await mkdir(outside);
    await writeFile(path.join(outside, 'secret.txt'), 'host secret');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads, writes (making folders) and removes below the root', async () => {
    await writeBeneath(workspace, path.join(workspace, 'dir', 'new', 'file.txt'), 'hello');
    expect(await readBeneath(workspace, path.join(workspace, 'dir', 'new', 'file.txt'))).toEqual(Buffer.from('hello'));
    await removeBeneath(workspace, path.join(workspace, 'dir', 'new', 'file.txt'));
    await expect(stat(path.join(workspace, 'dir', 'new', 'file.txt'))).rejects.toThrow();
    await removeBeneath(workspace, path.join(workspace, 'missing', 'file.txt')); // nothing to remove
  });

  it('refuses a path whose folder became a symlink out of the root, at any depth', async () => {
    await rm(path.join(workspace, 'dir'), { recursive: true });
    await symlink(outside, path.join(workspace, 'dir'));
    await expect(
      writeBeneath(workspace, path.join(workspace, 'dir', 'secret.txt'), 'overwritten'),
    ).rejects.toMatchObject({ code: expect.stringMatching(/ELOOP|ENOTDIR/) });
    await expect(readBeneath(workspace, path.join(workspace, 'dir', 'secret.txt'))).rejects.toMatchObject({
      code: expect.stringMatching(/ELOOP|ENOTDIR/),
    });
    await expect(removeBeneath(workspace, path.join(workspace, 'dir', 'secret.txt'))).rejects.toMatchObject({
      code: expect.stringMatching(/ELOOP|ENOTDIR/),
    });
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('host secret');
  });

  it('refuses a file that became a symlink', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'link.txt'));
    await expect(writeBeneath(workspace, path.join(workspace, 'link.txt'), 'overwritten')).rejects.toMatchObject({
      code: 'ELOOP',
    });
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('host secret');
  });

  it('the workspace refuses a path resolved before a folder on it was swapped for a link out', async () => {
    const opened = await openWorkspace(workspace);
    const resolved = await opened.resolvePath('dir/secret.txt');
    await rm(path.join(workspace, 'dir'), { recursive: true });
    await symlink(outside, path.join(workspace, 'dir'));
    await expect(opened.writeFile(resolved, 'overwritten')).rejects.toMatchObject({ code: 'path_outside_workspace' });
    await expect(opened.readFile(resolved)).rejects.toMatchObject({ code: 'path_outside_workspace' });
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('host secret');
    // a link that stays inside is followed
    await writeFile(path.join(workspace, 'real.txt'), 'inside');
    await symlink('real.txt', path.join(workspace, 'alias.txt'));
    expect((await opened.readFile(await opened.resolvePath('alias.txt'))).toString()).toBe('inside');
  });
});
