import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import { createGlobTool } from './glob-tool.js';
import { createGrepTool } from './grep-tool.js';

const grep = createGrepTool();
const glob = createGlobTool({ maxResults: 1_000 });
let root: string;
let context: ToolContext;

async function put(relative: string, content = 'needle\n'): Promise<void> {
  const file = path.join(root, relative);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
}

/** Files grep found `needle` in, relative to the workspace root, sorted. */
async function grepped(searchPath?: string): Promise<string[]> {
  const text = resultText(
    await grep.execute(
      { pattern: 'needle', case_sensitive: true, ...(searchPath ? { path: searchPath } : {}) },
      context,
    ),
  );
  return text
    .split('\n')
    .slice(1)
    .map((line) => line.slice(0, line.indexOf(':')))
    .sort();
}

beforeAll(async () => {
  const workspace = await openWorkspace(await mkdtemp(path.join(os.tmpdir(), 'flotilla-search-ignore-')));
  root = workspace.root;
  context = createToolContext({ workspace, conversationId: 'c1' });
  await put('.gitignore', '# build output\ndist/\n*.log\n!keep.log\n');
  await put('.git/info/exclude', 'secret.txt\n');
  await put('dist/out.js');
  await put('app.log');
  await put('keep.log');
  await put('secret.txt');
  await put('lib/generated.ts');
  await put('src/.gitignore', 'generated.ts\n/local.ts\n!debug.log\n');
  await put('src/a.ts');
  await put('src/generated.ts');
  await put('src/local.ts');
  await put('src/debug.log');
  await put('src/other.log');
  await put('src/sub/generated.ts');
  await put('src/sub/local.ts');
});

afterAll(() => rm(root, { recursive: true, force: true }));

const KEPT = ['keep.log', 'lib/generated.ts', 'src/a.ts', 'src/debug.log', 'src/sub/local.ts'];

describe('.gitignore', () => {
  it('keeps ignored files (root, nested, negated, anchored and .git/info/exclude rules) out of grep', async () => {
    expect(await grepped()).toEqual(KEPT);
  });

  it('keeps them out of glob', async () => {
    const text = resultText(await glob.execute({ pattern: '**/*' }, context));
    expect(text.split('\n').sort()).toEqual(KEPT.map((file) => path.join(root, file)).sort());
  });

  it('applies the rules of the directories above a searched subdirectory', async () => {
    expect(await grepped('src')).toEqual(['src/a.ts', 'src/debug.log', 'src/sub/local.ts']);
    expect(await grepped('src/sub')).toEqual(['src/sub/local.ts']);
  });

  it('still searches an ignored directory or file asked for explicitly', async () => {
    expect(await grepped('dist')).toEqual(['dist/out.js']);
    expect(await grepped('app.log')).toEqual(['app.log']);
  });
});
