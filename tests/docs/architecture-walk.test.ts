import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HEADING = '## One step, file by file';

/** The section under `heading`, up to the next heading of its level. */
function section(document: string, heading: string): string {
  const start = document.indexOf(`\n${heading}\n`);
  if (start < 0) return '';
  const end = document.indexOf('\n## ', start + heading.length + 2);
  return document.slice(start, end < 0 ? undefined : end);
}

const isFile = (path: string): Promise<boolean> =>
  stat(join(ROOT, path)).then(
    (found) => found.isFile(),
    () => false,
  );

describe(`docs/architecture.md, "${HEADING.slice(3)}"`, () => {
  it('names only files that exist: a renamed or moved file updates the walk', async () => {
    const walk = section(await readFile(join(ROOT, 'docs', 'architecture.md'), 'utf8'), HEADING);
    const paths = [
      ...new Set([...walk.matchAll(/`((?:libs|services|tests|docs|helm|deploy|dev)\/[^`\s]*)`/g)].map((m) => m[1]!)),
    ];
    expect(paths.length, 'the walk names its files in backticks').toBeGreaterThanOrEqual(40);
    const missing: string[] = [];
    for (const path of paths) if (!(await isFile(path))) missing.push(path);
    expect(missing).toEqual([]);
  });
});
