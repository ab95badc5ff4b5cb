import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import { globToRegExp } from './glob-pattern.js';
import { createGlobTool } from './glob-tool.js';
import { createGrepTool } from './grep-tool.js';

const grep = createGrepTool({ maxResults: 5 });
const glob = createGlobTool({ maxResults: 3 });
let dir: string;
let context: ToolContext;

async function put(relative: string, content: string | Buffer, ageSeconds: number): Promise<void> {
  const file = path.join(dir, relative);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  const time = new Date(Date.now() - ageSeconds * 1_000);
  await utimes(file, time, time);
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-search-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
  await put('src/old.ts', 'export function oldOne() {}\n', 300);
  await put('src/new.ts', 'export function newOne() {}\nconst x = 1;\n', 10);
  await put('src/deep/util.tsx', 'export const Util = () => null;\n', 100);
  await put('README.md', '# Function docs\n', 50);
  await put('node_modules/pkg/index.ts', 'export function hidden() {}\n', 1);
  await put('.git/config', 'function\n', 1);
  await put('image.bin', Buffer.from([0, 102, 117, 110, 99, 116, 105, 111, 110]), 1);
  await put('many.txt', 'match\n'.repeat(20), 400);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('globToRegExp', () => {
  it('supports *, **, ?, braces and classes', () => {
    expect(globToRegExp('*.ts').test('a/b/c.ts')).toBe(true);
    expect(globToRegExp('src/*.ts').test('src/deep/c.ts')).toBe(false);
    expect(globToRegExp('src/**/*.ts').test('src/c.ts')).toBe(true);
    expect(globToRegExp('src/**/*.{ts,tsx}').test('src/a/b/c.tsx')).toBe(true);
    expect(globToRegExp('file?.[ch]').test('file1.c')).toBe(true);
    expect(globToRegExp('file?.[!ch]').test('file1.c')).toBe(false);
    expect(globToRegExp('a+b.(x)').test('a+b.(x)')).toBe(true);
  });
});

describe('grep', () => {
  it('finds matching lines, newest files first, skipping hidden, node_modules and binary files', async () => {
    const result = await grep.execute({ pattern: 'function\\s+\\w+', case_sensitive: true }, context);
    const text = resultText(result);
    expect(text.indexOf('src/new.ts:1:')).toBeGreaterThan(-1);
    expect(text.indexOf('src/new.ts:1:')).toBeLessThan(text.indexOf('src/old.ts:1:'));
    expect(text).not.toContain('node_modules');
    expect(text).not.toContain('.git');
    expect(text).not.toContain('image.bin');
  });

  it('honours include globs, paths and case-insensitivity', async () => {
    expect(
      resultText(await grep.execute({ pattern: 'function', include: '*.md', case_sensitive: false }, context)),
    ).toContain('README.md:1:');
    const scoped = resultText(
      await grep.execute({ pattern: 'export', path: 'src/deep', case_sensitive: true }, context),
    );
    expect(scoped).toContain('src/deep/util.tsx:1:');
    expect(scoped).not.toContain('new.ts');
  });

  it('bounds results and explains errors', async () => {
    const many = resultText(await grep.execute({ pattern: 'match', case_sensitive: true }, context));
    expect(many).toContain('Stopped at 5 matches');
    const invalid = await grep.execute({ pattern: '(unclosed', case_sensitive: true }, context);
    expect(invalid.isError).toBe(true);
    expect(resultText(invalid)).toContain('Invalid regular expression');
    const outside = await grep.execute({ pattern: 'x', path: '/etc', case_sensitive: true }, context);
    expect(resultText(outside)).toContain('outside the workspace');
    expect(resultText(await grep.execute({ pattern: 'zzz-none', case_sensitive: true }, context))).toContain(
      'No matches',
    );
  });
});

describe('glob', () => {
  it('returns matching paths sorted by modification time', async () => {
    const text = resultText(await glob.execute({ pattern: 'src/**/*.{ts,tsx}' }, context));
    const root = context.workspace.root;
    expect(text.split('\n')).toEqual([`${root}/src/new.ts`, `${root}/src/deep/util.tsx`, `${root}/src/old.ts`]);
  });

  it('bounds results and reports no match and bad paths', async () => {
    const all = resultText(await glob.execute({ pattern: '*' }, context));
    expect(all).toContain('more files match');
    expect(resultText(await glob.execute({ pattern: '*.py' }, context))).toContain('No files match');
    const missing = await glob.execute({ pattern: '*', path: 'nope' }, context);
    expect(missing.isError).toBe(true);
    expect(resultText(missing)).toContain('does not exist');
  });
});
