import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SOURCE = import.meta.dirname;

/**
 * The files each of this library's files imports from its own (`./x.js`, `import type` included:
 * ESLint's import-x/no-cycle lets a cycle through type-only imports pass, and a cycle of types is
 * still two files that cannot be read, or moved, one without the other).
 */
function importGraph(): Map<string, string[]> {
  const files = readdirSync(SOURCE, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imports = relativeImports(readFileSync(join(SOURCE, file), 'utf8'));
    graph.set(
      file,
      imports.map((specifier) => relative(SOURCE, join(SOURCE, dirname(file), specifier.replace(/\.js$/, '.ts')))),
    );
  }
  return graph;
}

/** The relative specifiers a file's imports and re-exports name, as TypeScript reads them (never a comment or a string). */
function relativeImports(text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('./') || specifier.startsWith('../'));
}

/** Every import that closes a cycle, as the path round it (a depth-first search's back edges: none means no cycle). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    path.push(file);
    for (const imported of graph.get(file) ?? []) {
      const at = path.indexOf(imported);
      if (at >= 0) found.push([...path.slice(at), imported].join(' -> '));
      else if (!done.has(imported)) visit(imported);
    }
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return found;
}

describe('imports within libs/agent', () => {
  it('name files that exist, and go round no cycle', () => {
    const graph = importGraph();
    const missing = [...graph].flatMap(([file, imports]) =>
      imports.filter((imported) => !graph.has(imported)).map((imported) => `${file} -> ${imported}`),
    );
    expect(missing).toEqual([]);
    expect(cycles(graph)).toEqual([]);
  });

  it('reads type-only, multi-line and dynamic imports and re-exports, never a package, a comment or a string', () => {
    const text = [
      "import type { Event } from '@flotilla/events';",
      "import type { NextWork } from './progress.js';",
      'import {',
      '  a,',
      '  type B,',
      "} from '../lib/a.js';",
      "export { c } from './c.js';",
      "export type { D } from './d.js';",
      "const e = await import('./e.js');",
      "// import { f } from './f.js';",
      'const g = "import { g } from \'./g.js\';";',
    ].join('\n');
    expect(relativeImports(text)).toEqual(['./progress.js', '../lib/a.js', './c.js', './d.js', './e.js']);
  });

  it('finds a cycle of two files, and one through a third', () => {
    expect(
      cycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['a.ts']],
        ]),
      ),
    ).toEqual(['a.ts -> b.ts -> a.ts']);
    expect(
      cycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
        ]),
      ),
    ).toEqual(['a.ts -> b.ts -> c.ts -> a.ts']);
  });
});
