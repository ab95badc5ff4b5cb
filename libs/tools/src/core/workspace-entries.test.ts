import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ToolError } from './errors.js';
import { openWorkspace, type Workspace } from './workspace.js';

const LIMITS = { maxEntries: 100, maxScanned: 1_000 };

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'expected a ToolError').toBeInstanceOf(ToolError);
  return (error as ToolError).code;
}

describe('workspace files as a user reaches them', () => {
  let root: string;
  let outside: string;
  let workspace: Workspace;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-entries-'));
    outside = path.join(root, 'outside');
    await mkdir(path.join(root, 'workspace', 'src'), { recursive: true });
    await mkdir(outside);
    await writeFile(path.join(outside, 'secret.txt'), 'host secret');
    await writeFile(path.join(root, 'workspace', 'src', 'b.txt'), 'bee');
    await writeFile(path.join(root, 'workspace', 'a.txt'), 'a');
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'workspace', 'planted'));
    await symlink('src', path.join(root, 'workspace', 'src-link'));
    workspace = await openWorkspace(path.join(root, 'workspace'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('lists a folder one level, folders first, links as links', async () => {
    const listing = await workspace.listDirectory(workspace.root, LIMITS);
    expect(listing.truncated).toBe(false);
    expect(listing.entries.map((entry) => [entry.name, entry.type, entry.size])).toEqual([
      ['src', 'directory', null],
      ['a.txt', 'file', 1],
      ['planted', 'symlink', null],
      ['src-link', 'symlink', null],
    ]);
    expect(listing.entries.find((entry) => entry.name === 'planted')?.linkTarget).toBe(
      path.join(outside, 'secret.txt'),
    );
    expect(
      (await workspace.listDirectory(await workspace.resolvePath('src-link'), LIMITS)).entries.map(
        (entry) => entry.name,
      ),
    ).toEqual(['b.txt']);
  });

  it('cuts a large folder at its limits and says so', async () => {
    await mkdir(path.join(workspace.root, 'many'));
    for (let index = 0; index < 30; index += 1)
      await writeFile(path.join(workspace.root, 'many', `f${String(index).padStart(2, '0')}`), '');
    const cut = await workspace.listDirectory(await workspace.resolvePath('many'), {
      maxEntries: 10,
      maxScanned: 1_000,
    });
    expect(cut.entries.map((entry) => entry.name)).toEqual(Array.from({ length: 10 }, (_, index) => `f0${index}`));
    expect(cut.truncated).toBe(true);
    expect(
      (await workspace.listDirectory(await workspace.resolvePath('many'), { maxEntries: 100, maxScanned: 5 }))
        .truncated,
    ).toBe(true);
  });

  it('refuses what is not a readable folder or file, with a code', async () => {
    expect(await codeOf(workspace.listDirectory(await workspace.resolvePath('missing'), LIMITS))).toBe('not_found');
    expect(await codeOf(workspace.listDirectory(await workspace.resolvePath('a.txt'), LIMITS))).toBe('not_a_directory');
    expect(await codeOf(workspace.openRegularFile(await workspace.resolvePath('src')))).toBe('is_a_directory');
    expect(await codeOf(workspace.openRegularFile(await workspace.resolvePath('missing.txt')))).toBe('not_found');
    expect(await codeOf(workspace.resolvePath('planted'))).toBe('path_outside_workspace');
    // resolved before the link was planted: the open still refuses it
    const resolved = await workspace.resolvePath('later');
    await symlink(path.join(outside, 'secret.txt'), path.join(workspace.root, 'later'));
    expect(await codeOf(workspace.openRegularFile(resolved))).toBe('path_outside_workspace');
  });

  it('refuses a FIFO at once instead of waiting for a writer', async () => {
    execFileSync('mkfifo', [path.join(workspace.root, 'pipe')]);
    expect(await codeOf(workspace.openRegularFile(await workspace.resolvePath('pipe')))).toBe('not_a_regular_file');
  });

  it('reads a regular file through a handle', async () => {
    const { handle, stats } = await workspace.openRegularFile(await workspace.resolvePath('src-link/b.txt'));
    try {
      expect(stats.size).toBe(3);
      expect((await handle.readFile()).toString()).toBe('bee');
    } finally {
      await handle.close();
    }
  });

  it('replaces a file at once, making folders, and replaces a planted link instead of writing through it', async () => {
    const fill = (text: string) => async (handle: FileHandle) => void (await handle.writeFile(text));
    expect(await workspace.replaceFile(await workspace.resolvePath('new/deep/c.txt'), fill('see'))).toEqual({
      created: true,
    });
    expect(await readFile(path.join(workspace.root, 'new', 'deep', 'c.txt'), 'utf8')).toBe('see');
    expect(await workspace.replaceFile(await workspace.resolvePath('a.txt'), fill('again'))).toEqual({
      created: false,
    });
    expect(await readFile(path.join(workspace.root, 'a.txt'), 'utf8')).toBe('again');
    // a link whose target is outside: replaced as an entry of the workspace, the target untouched
    const planted = path.join(workspace.root, 'planted');
    expect(await workspace.replaceFile(planted, fill('uploaded'))).toEqual({ created: false });
    expect(await readFile(planted, 'utf8')).toBe('uploaded');
    await expect(readlink(planted)).rejects.toMatchObject({ code: 'EINVAL' });
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('host secret');
    // no temporary file left behind
    expect(
      (await workspace.listDirectory(workspace.root, LIMITS)).entries.map((entry) => entry.name),
    ).not.toContainEqual(expect.stringContaining('flotilla-upload'));
  });

  it('refuses to replace a folder, or to write through a folder link that leads out', async () => {
    const fill = async () => undefined;
    expect(await codeOf(workspace.replaceFile(await workspace.resolvePath('src'), fill))).toBe('is_a_directory');
    await symlink(outside, path.join(workspace.root, 'out-dir'));
    expect(await codeOf(workspace.replaceFile(path.join(workspace.root, 'out-dir', 'x.txt'), fill))).toBe(
      'path_outside_workspace',
    );
    await expect(stat(path.join(outside, 'x.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
    // a failed fill leaves nothing
    await expect(
      workspace.replaceFile(await workspace.resolvePath('broken.txt'), () => Promise.reject(new Error('cut off'))),
    ).rejects.toThrow('cut off');
    expect((await workspace.listDirectory(workspace.root, LIMITS)).entries.map((entry) => entry.name)).toEqual([
      'src',
      'a.txt',
      'out-dir',
      'planted',
      'src-link',
    ]);
  });
});
