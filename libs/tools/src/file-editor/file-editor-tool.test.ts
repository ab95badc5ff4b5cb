import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import type { FileEditorParameters } from './file-editor-tool.js';
import { createFileEditorTool } from './file-editor-tool.js';

const editor = createFileEditorTool();
let dir: string;
let context: ToolContext;

async function edit(params: FileEditorParameters) {
  const result = await editor.execute(params, context);
  return { isError: result.isError, text: resultText(result) };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-editor-test-'));
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file_editor', () => {
  it('creates a file and refuses to overwrite it', async () => {
    const created = await edit({ command: 'create', path: 'src/a.txt', file_text: 'one\ntwo\nthree\nfour\n' });
    expect(created.isError).toBe(false);
    expect(await readFile(path.join(dir, 'src/a.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\n');
    const again = await edit({ command: 'create', path: 'src/a.txt', file_text: 'x' });
    expect(again.isError).toBe(true);
    expect(again.text).toContain('already exists');
  });

  it('views whole files, ranges and directories', async () => {
    const whole = await edit({ command: 'view', path: `${context.workspace.root}/src/a.txt` });
    expect(whole.text).toContain('     1\tone\n     2\ttwo');
    const range = await edit({ command: 'view', path: 'src/a.txt', view_range: [2, 3] });
    expect(range.text).toContain('     2\ttwo\n     3\tthree');
    expect(range.text).not.toContain('\tone');
    expect((await edit({ command: 'view', path: 'src/a.txt', view_range: [3, -1] })).text).toContain('     4\tfour');
    const bad = await edit({ command: 'view', path: 'src/a.txt', view_range: [9, 10] });
    expect(bad.isError).toBe(true);
    await writeFile(path.join(dir, '.hidden'), 'x');
    const listing = await edit({ command: 'view', path: '.' });
    expect(listing.text).toContain(`${context.workspace.root}/src/a.txt`);
    expect(listing.text).not.toContain('.hidden');
  });

  it('replaces a unique match and explains zero or several matches', async () => {
    const replaced = await edit({ command: 'str_replace', path: 'src/a.txt', old_str: 'two', new_str: 'TWO' });
    expect(replaced.isError).toBe(false);
    expect(replaced.text).toContain('     2\tTWO');
    const none = await edit({ command: 'str_replace', path: 'src/a.txt', old_str: 'absent', new_str: 'x' });
    expect(none.isError).toBe(true);
    expect(none.text).toContain('did not appear verbatim');
    await writeFile(path.join(dir, 'dup.txt'), 'x = 1\ny = 2\nx = 1\n');
    const several = await edit({ command: 'str_replace', path: 'dup.txt', old_str: 'x = 1', new_str: 'x = 3' });
    expect(several.isError).toBe(true);
    expect(several.text).toContain('at lines 1, 3');
    const missingField = await edit({ command: 'str_replace', path: 'dup.txt' });
    expect(missingField.text).toContain('`old_str` is required');
  });

  it('inserts after a line and undoes edits in order', async () => {
    await edit({ command: 'insert', path: 'src/a.txt', insert_line: 0, new_str: 'zero' });
    expect(await readFile(path.join(dir, 'src/a.txt'), 'utf8')).toBe('zero\none\nTWO\nthree\nfour\n');
    const outOfRange = await edit({ command: 'insert', path: 'src/a.txt', insert_line: 99, new_str: 'x' });
    expect(outOfRange.isError).toBe(true);
    await edit({ command: 'undo_edit', path: 'src/a.txt' });
    expect(await readFile(path.join(dir, 'src/a.txt'), 'utf8')).toBe('one\nTWO\nthree\nfour\n');
    await edit({ command: 'undo_edit', path: 'src/a.txt' });
    expect(await readFile(path.join(dir, 'src/a.txt'), 'utf8')).toBe('one\ntwo\nthree\nfour\n');
    await edit({ command: 'undo_edit', path: 'src/a.txt' });
    const nothing = await edit({ command: 'undo_edit', path: 'src/a.txt' });
    expect(nothing.isError).toBe(true);
  });

  it('refuses binary and non-UTF-8 files with a clear message', async () => {
    await writeFile(path.join(dir, 'latin1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    const latin1 = await edit({ command: 'view', path: 'latin1.txt' });
    expect(latin1.isError).toBe(true);
    expect(latin1.text).toContain('not UTF-8 text');
    await writeFile(path.join(dir, 'blob.bin'), Buffer.from([0, 1, 2, 255, 0]));
    const blob = await edit({ command: 'str_replace', path: 'blob.bin', old_str: 'a', new_str: 'b' });
    expect(blob.text).toContain('not UTF-8 text');
  });

  it('clips long views', async () => {
    await writeFile(path.join(dir, 'long.txt'), 'a line of text\n'.repeat(5_000));
    const view = await edit({ command: 'view', path: 'long.txt' });
    expect(view.text.length).toBeLessThan(16_500);
    expect(view.text).toContain('view_range');
  });

  it('refuses paths outside the workspace', async () => {
    for (const outside of ['../escape.txt', '/etc/passwd']) {
      const result = await edit({ command: 'view', path: outside });
      expect(result.isError).toBe(true);
      expect(result.text).toContain('outside the workspace');
    }
    await symlink('/etc', path.join(dir, 'etc-link'));
    const viaLink = await edit({ command: 'view', path: 'etc-link/passwd' });
    expect(viaLink.isError).toBe(true);
    expect(viaLink.text).toContain('symlink');
    const created = await edit({ command: 'create', path: 'etc-link/new-file', file_text: 'x' });
    expect(created.isError).toBe(true);
  });
});
