import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from './errors.js';
import type { Workspace } from './workspace.js';
import { openWorkspace } from './workspace.js';

let dir: string;
let workspace: Workspace;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-workspace-test-'));
  workspace = await openWorkspace(dir);
  await mkdir(path.join(dir, 'inner'));
  await symlink(path.join(dir, 'inner'), path.join(dir, 'inside-link'));
  await symlink(os.tmpdir(), path.join(dir, 'outside-link'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('workspace paths', () => {
  it('resolves relative and absolute paths inside the root', async () => {
    expect(await workspace.resolvePath('a/b.txt')).toBe(path.join(workspace.root, 'a/b.txt'));
    expect(await workspace.resolvePath(`${workspace.root}/x`)).toBe(path.join(workspace.root, 'x'));
    expect(await workspace.resolvePath('inner/../y')).toBe(path.join(workspace.root, 'y'));
    expect(await workspace.resolvePath('inside-link/new.txt')).toBe(path.join(workspace.root, 'inside-link/new.txt'));
  });

  it('refuses escapes with a clear error', async () => {
    for (const bad of ['..', '../x', '/etc/passwd', 'outside-link/file', 'inner/../../x']) {
      const error = await workspace.resolvePath(bad).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).code).toBe('path_outside_workspace');
      expect((error as ToolError).message).toContain('outside the workspace');
    }
  });
});
