import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { openWorkspace } from '@flotilla/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readWorkspaceContext, WORKSPACE_CONTEXT_BOUNDS } from './workspace-context.js';

let root: string;
let outside: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'flotilla-context-'));
  outside = await mkdtemp(join(tmpdir(), 'flotilla-outside-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

describe('readWorkspaceContext', () => {
  it('reads the root context files, the skills and the nested rules, by paths relative to the workspace', async () => {
    await put('AGENTS.md', 'agents');
    await put('.cursorrules', 'cursor');
    await put('.agents/skills/git.md', '---\ntriggers: [git]\n---\ngit skill');
    await put('.agents/skills/always.md', 'always on');
    await put('.openhands/skills/pdf/SKILL.md', '# Fill PDF forms\n\nlong body');
    await put('src/api/AGENTS.md', 'api rule');
    await put('node_modules/lib/AGENTS.md', 'not ours');
    await put('.hidden/AGENTS.md', 'not walked');
    const context = await readWorkspaceContext(await openWorkspace(root));
    expect(context.repository).toEqual([
      { path: 'AGENTS.md', content: 'agents', truncated: false },
      { path: '.cursorrules', content: 'cursor', truncated: false },
      { path: '.agents/skills/always.md', content: 'always on', truncated: false },
    ]);
    expect(context.knowledge).toEqual([
      { path: '.agents/skills/git.md', content: 'git skill', truncated: false, name: 'git', triggers: ['git'] },
    ]);
    expect(context.skills).toEqual([
      { name: 'pdf', description: 'Fill PDF forms', path: '.openhands/skills/pdf/SKILL.md' },
    ]);
    expect(context.rules).toEqual([
      { path: 'src/api/AGENTS.md', content: 'api rule', truncated: false, folder: 'src/api' },
    ]);
    expect(context.notes).toEqual([]);
    expect(JSON.stringify(context)).not.toContain(root);
  });

  it('reads only the beginning of a 1 GB AGENTS.md, quickly, and says so', async () => {
    await put('AGENTS.md', 'x'.repeat(WORKSPACE_CONTEXT_BOUNDS.fileChars + 10));
    const handle = await open(join(root, 'AGENTS.md'), 'r+');
    await handle.truncate(1024 ** 3); // sparse: no disk used
    await handle.close();
    const started = performance.now();
    const context = await readWorkspaceContext(await openWorkspace(root));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(context.repository[0]).toMatchObject({ path: 'AGENTS.md', truncated: true });
    expect(context.repository[0]!.content).toBe('x'.repeat(WORKSPACE_CONTEXT_BOUNDS.fileChars));
    expect(context.notes).toEqual([
      `AGENTS.md is longer than ${WORKSPACE_CONTEXT_BOUNDS.fileChars} characters: only its beginning is kept`,
    ]);
  });

  it('follows no symlink out of the workspace, and skips a FIFO instead of blocking on it', async () => {
    await writeFile(join(outside, 'secret.md'), 'SECRET');
    await mkdir(join(outside, 'folder'));
    await writeFile(join(outside, 'folder', 'AGENTS.md'), 'SECRET RULE');
    await symlink(join(outside, 'secret.md'), join(root, 'AGENTS.md'));
    await symlink(join(outside, 'folder'), join(root, 'linked'));
    execFileSync('mkfifo', [join(root, 'CLAUDE.md')]);
    const context = await readWorkspaceContext(await openWorkspace(root));
    expect(JSON.stringify(context)).not.toContain('SECRET');
    expect(context.repository).toEqual([]);
    expect(context.rules).toEqual([]);
  });

  it('keeps within the total bound across many rules', async () => {
    for (let index = 0; index < 15; index += 1)
      await put(`pkg${String(index).padStart(2, '0')}/AGENTS.md`, 'r'.repeat(WORKSPACE_CONTEXT_BOUNDS.fileChars));
    const context = await readWorkspaceContext(await openWorkspace(root));
    const total = context.rules.reduce((sum, rule) => sum + rule.content.length, 0);
    expect(total).toBeLessThanOrEqual(WORKSPACE_CONTEXT_BOUNDS.totalChars);
    expect(context.rules.length).toBe(WORKSPACE_CONTEXT_BOUNDS.totalChars / WORKSPACE_CONTEXT_BOUNDS.fileChars);
    expect(context.notes.some((note) => note.includes('the workspace context is full'))).toBe(true);
  });
});
