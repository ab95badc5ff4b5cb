import { execFileSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import { createGlobTool } from './glob-tool.js';
import { createGrepTool } from './grep-tool.js';

const HOSTILE = { pattern: '(a+)+$', case_sensitive: true } as const;

async function temporaryWorkspace(
  prefix: string,
): Promise<{ dir: string; context: (signal?: AbortSignal) => ToolContext }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const workspace = await openWorkspace(dir);
  return {
    dir: workspace.root,
    context: (signal) => createToolContext({ workspace, conversationId: 'c1', ...(signal ? { signal } : {}) }),
  };
}

/** Ticks of a 10 ms timer on this thread while `work` runs, and the longest gap between two. */
async function whileTicking<T>(
  work: () => Promise<T>,
): Promise<{ value: T; ticks: number; longestGapMs: number; elapsedMs: number }> {
  const started = performance.now();
  let last = started;
  let ticks = 0;
  let longestGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
    ticks += 1;
  }, 10);
  try {
    const value = await work();
    return { value, ticks, longestGapMs, elapsedMs: performance.now() - started };
  } finally {
    clearInterval(timer);
  }
}

describe('a pattern that backtracks catastrophically', () => {
  let space: Awaited<ReturnType<typeof temporaryWorkspace>>;
  beforeAll(async () => {
    space = await temporaryWorkspace('flotilla-search-hostile-');
    await writeFile(path.join(space.dir, 'evil.txt'), `${'a'.repeat(40)}b\n`);
  });
  afterAll(() => rm(space.dir, { recursive: true, force: true }));

  it('fails with an error result at the time bound while this thread keeps running', async () => {
    const grep = createGrepTool({ timeoutMs: 1_500 });
    const {
      value: result,
      ticks,
      longestGapMs,
      elapsedMs,
    } = await whileTicking(() => grep.execute(HOSTILE, space.context()));
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('took longer than 1.5 s');
    expect(resultText(result)).toContain('Narrow the path or the include glob, or simplify the pattern');
    expect(result.details).toEqual({ error_code: 'timeout' });
    // matching on this thread would take hours and block the timer for all of it
    expect(elapsedMs).toBeLessThan(1_500 + 5_000);
    expect(ticks).toBeGreaterThan(10);
    expect(longestGapMs).toBeLessThan(1_000);
  });

  it('is stopped by the context signal', async () => {
    const grep = createGrepTool({ timeoutMs: 120_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const { value: result, elapsedMs } = await whileTicking(() =>
      grep.execute(HOSTILE, space.context(controller.signal)),
    );
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('cancelled');
    expect(elapsedMs).toBeLessThan(10_000);
  });

  it('does not start when the signal has already aborted', async () => {
    const result = await createGlobTool().execute({ pattern: '*' }, space.context(AbortSignal.abort()));
    expect(result.isError).toBe(true);
    expect(resultText(result)).toContain('cancelled');
  });

  it('the same search with a pattern that does not backtrack finishes', async () => {
    const result = await createGrepTool({ timeoutMs: 5_000 }).execute(
      { pattern: 'a+b$', case_sensitive: true },
      space.context(),
    );
    expect(resultText(result)).toContain('evil.txt:1:');
  });
});

describe('symlinks and special files', () => {
  let space: Awaited<ReturnType<typeof temporaryWorkspace>>;
  beforeAll(async () => {
    space = await temporaryWorkspace('flotilla-search-links-');
    await mkdir(path.join(space.dir, 'a'));
    await writeFile(path.join(space.dir, 'a', 'file.txt'), 'needle\n');
    await symlink('.', path.join(space.dir, 'loop'));
    await symlink('..', path.join(space.dir, 'a', 'back'));
    await symlink(path.join(space.dir, 'a', 'file.txt'), path.join(space.dir, 'link.txt'));
    await symlink(os.tmpdir(), path.join(space.dir, 'outside'));
    execFileSync('mkfifo', [path.join(space.dir, 'pipe.txt')]);
  });
  afterAll(() => rm(space.dir, { recursive: true, force: true }));

  it('are not followed, so a symlink loop ends and a FIFO is not read; a symlinked file asked for by name is', async () => {
    const grep = createGrepTool({ timeoutMs: 5_000 });
    const found = await grep.execute({ pattern: 'needle', case_sensitive: true }, space.context());
    expect(found.isError).toBe(false);
    expect(resultText(found).split('\n')).toEqual([
      `1 match(es) in 1 file(s) (paths relative to ${space.dir}):`,
      'a/file.txt:1: needle',
    ]);
    const listed = await createGlobTool({ timeoutMs: 5_000 }).execute({ pattern: '**/*' }, space.context());
    expect(resultText(listed).split('\n')).toEqual([path.join(space.dir, 'a', 'file.txt')]);
    const named = await grep.execute({ pattern: 'needle', path: 'link.txt', case_sensitive: true }, space.context());
    expect(resultText(named)).toContain('link.txt:1: needle');
  });
});

describe('a huge tree', () => {
  let space: Awaited<ReturnType<typeof temporaryWorkspace>>;
  // 20,000 rather than 200,000: making and removing 200,000 files takes 12 s on an idle CI
  // machine (80 s under load) while the limit is shown the same; search-tools.bench.ts times that
  const fileCount = 20_000;
  beforeAll(async () => {
    space = await temporaryWorkspace('flotilla-search-huge-');
    const big = path.join(space.dir, 'big');
    await mkdir(big);
    for (let index = 0; index < fileCount; index += 1) closeSync(openSync(path.join(big, `f${index}.txt`), 'w'));
    for (let index = 0; index < 30; index += 1)
      await mkdir(path.join(space.dir, 'dirs', `d${index}`), { recursive: true });
  }, 120_000);
  afterAll(() => rm(space.dir, { recursive: true, force: true }), 120_000);

  it(`of ${fileCount} files is listed up to the file limit, with a note`, async () => {
    const glob = createGlobTool({ maxFiles: 100, maxResults: 1_000, timeoutMs: 10_000 });
    const result = await glob.execute({ pattern: '*.txt', path: 'big' }, space.context());
    expect(result.isError).toBe(false);
    const lines = resultText(result).split('\n');
    expect(lines.at(-1)).toBe('[Only the first 100 files were examined.]');
    expect(lines).toHaveLength(101);
    expect(result.details).toEqual({ count: 100, truncated: true });
  });

  it('says a search without matches was truncated', async () => {
    const grep = createGrepTool({ maxFiles: 100, timeoutMs: 10_000 });
    const text = resultText(
      await grep.execute({ pattern: 'never', path: 'big', case_sensitive: true }, space.context()),
    );
    expect(text).toContain('No matches');
    expect(text).toContain('[Only the first 100 files were searched.]');
  });

  it('enters at most the directory limit', async () => {
    const glob = createGlobTool({ maxDirectories: 5, timeoutMs: 10_000 });
    const text = resultText(await glob.execute({ pattern: '*', path: 'dirs' }, space.context()));
    expect(text).toContain('[Only the first 5 directories were examined; narrow the path.]');
  });
});
