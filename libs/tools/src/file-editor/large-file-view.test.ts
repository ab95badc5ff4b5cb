import { open, mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { OUTPUT_BOUNDS } from '../core/output-bounds.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import type { FileEditorParameters } from './file-editor-tool.js';
import { createFileEditorTool } from './file-editor-tool.js';

const editor = createFileEditorTool();
let dir: string;
let context: ToolContext;
/** Past the editor's bound: viewed in parts. */
const LINES = 500_000;
const line = (number: number): string => `line ${String(number).padStart(7, '0')} of the large file`;

async function edit(params: Omit<FileEditorParameters, 'path'> & { path: string }) {
  const result = await editor.execute(params as FileEditorParameters, context);
  return { isError: result.isError, text: resultText(result) };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-large-view-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
  await writeFile(
    path.join(dir, 'large.txt'),
    Array.from({ length: LINES }, (_, index) => `${line(index + 1)}\n`).join(''),
  );
  // one line of 64 GiB (sparse: what is read of it shows whether a view reads the whole line)
  await writeFile(path.join(dir, 'one-line.txt'), 'z'.repeat(20_000));
  await truncate(path.join(dir, 'one-line.txt'), 64 * 1024 ** 3);
  // a sparse file of 64 GiB: what is read of it shows whether a view reads the whole file
  // (text in its first 8 KiB, where a NUL would make it binary)
  await writeFile(
    path.join(dir, 'sparse.txt'),
    Array.from({ length: 300 }, (_, index) => `${line(index + 1)}\n`).join(''),
  );
  await truncate(path.join(dir, 'sparse.txt'), 64 * 1024 ** 3);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file_editor on a file too large to read whole', () => {
  it('views its first lines, within the view bound, and says how to see the rest', async () => {
    const view = await edit({ command: 'view', path: 'large.txt' });
    expect(view.isError).toBe(false);
    expect(view.text.length).toBeLessThanOrEqual(OUTPUT_BOUNDS.viewChars + 600);
    expect(view.text).toContain(`     1\t${line(1)}\n     2\t${line(2)}\n`);
    const shown = Number(/lines 1-(\d+) are shown/.exec(view.text)?.[1]);
    expect(shown).toBeGreaterThan(100);
    expect(view.text).toContain(`${String(shown).padStart(6)}\t${line(shown)}\n[The file is `);
    expect(view.text).toContain(`Use view_range to view other lines (e.g. [${shown + 1}, ${shown + 200}])`);
  });

  it('views a range deep in it, and its last lines', async () => {
    const range = await edit({ command: 'view', path: 'large.txt', view_range: [400_000, 400_002] });
    expect(range.text).toBe(
      `Here is the result of running \`cat -n\` on ${path.join(dir, 'large.txt')} (lines 400000-400002):\n${[400_000, 400_001, 400_002].map((number) => `${number}\t${line(number)}`).join('\n')}`,
    );
    const last = await edit({ command: 'view', path: 'large.txt', view_range: [LINES - 1, -1] });
    expect(last.text.endsWith(`${LINES - 1}\t${line(LINES - 1)}\n${LINES}\t${line(LINES)}`)).toBe(true);
    const past = await edit({ command: 'view', path: 'large.txt', view_range: [LINES - 1, LINES + 5] });
    expect(past.text).toContain(`[The file ends at line ${LINES}.]`);
    const beyond = await edit({ command: 'view', path: 'large.txt', view_range: [LINES + 1, LINES + 2] });
    expect(beyond).toEqual({
      isError: true,
      text: `Invalid view_range [${LINES + 1}, ${LINES + 2}]: the first line must be between 1 and ${LINES} (the file has ${LINES} lines).`,
    });
  });

  it('cuts a line longer than the view, and reads no further', async () => {
    const started = Date.now();
    const view = await edit({ command: 'view', path: 'one-line.txt' });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(view.isError).toBe(false);
    expect(view.text.length).toBeLessThanOrEqual(OUTPUT_BOUNDS.viewChars + 600);
    expect(view.text).toMatch(/^ {5}1\tz{1000}/m);
    const kept = OUTPUT_BOUNDS.viewChars - 7;
    expect(view.text).toContain(
      `[Line 1 is longer than ${kept.toLocaleString('en-US')} characters; only its first ${kept.toLocaleString('en-US')} are shown. Read on by bytes in the terminal: \`tail -c +${kept + 1} `,
    );
  });

  it('reads only what the view needs: the first lines of a 64 GiB sparse file at once', async () => {
    const started = Date.now();
    const view = await edit({ command: 'view', path: 'sparse.txt', view_range: [1, 2] });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(view.text).toContain(`     1\t${line(1)}\n     2\t${line(2)}`);
  });

  it('refuses to edit it, without reading it', async () => {
    for (const params of [
      { command: 'str_replace', path: 'sparse.txt', old_str: 'line', new_str: 'LINE' },
      { command: 'insert', path: 'sparse.txt', insert_line: 1, new_str: 'new' },
    ] as const) {
      const started = Date.now();
      const result = await edit(params);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(result).toEqual({
        isError: true,
        text: `The file ${path.join(dir, 'sparse.txt')} is 68,719,476,736 bytes, too large for the editor (at most 10,485,760). View parts of it with file_editor view and a view_range, or use the terminal (e.g. \`sed -n '1,100p'\`, \`grep -n\`).`,
      });
    }
    const handle = await open(path.join(dir, 'sparse.txt'));
    expect((await handle.stat()).size).toBe(64 * 1024 ** 3);
    await handle.close();
  });
});
