import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, bench, describe } from 'vitest';
import { createToolContext } from '../core/context.js';
import { openWorkspace } from '../core/workspace.js';
import { createGlobTool } from './glob-tool.js';
import { createGrepTool } from './grep-tool.js';

// Run with: npx vitest bench libs/tools/src/search
// A directory of 200,000 files: with a small file limit the walk reads about as many entries as
// the limit, so the time stays that of starting a worker whatever the directory's size.
const FILE_COUNT = 200_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'flotilla-search-bench-'));
for (let index = 0; index < FILE_COUNT; index += 1) closeSync(openSync(path.join(dir, `f${index}.txt`), 'w'));
const context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'bench' });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe(`a directory of ${FILE_COUNT} files`, () => {
  const smallGlob = createGlobTool({ maxFiles: 100 });
  const defaultGlob = createGlobTool();
  const defaultGrep = createGrepTool();
  bench('glob *.txt, file limit 100', async () => {
    await smallGlob.execute({ pattern: '*.txt' }, context);
  });
  bench('glob *.txt, default file limit (50,000; stats and sorts them)', async () => {
    await defaultGlob.execute({ pattern: '*.txt' }, context);
  });
  bench('grep, default file limit (50,000 empty files read)', async () => {
    await defaultGrep.execute({ pattern: 'x', case_sensitive: true }, context);
  });
});
