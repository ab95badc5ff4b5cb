import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { ToolContext } from '../core/context.js';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import { createApplyPatchTool } from './apply-patch-tool.js';

const tool = createApplyPatchTool();
const dirs: string[] = [];
let dir: string;
let context: ToolContext;

const read = (relative: string): Promise<string> => readFile(path.join(dir, relative), 'utf8');
const exists = (relative: string): Promise<boolean> =>
  stat(path.join(dir, relative)).then(
    () => true,
    () => false,
  );
const apply = async (patch: string) => {
  const result = await tool.execute({ patch }, context);
  return { isError: result.isError, text: resultText(result) };
};

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'flotilla-patch-test-'));
  dirs.push(dir);
  context = createToolContext({ workspace: await openWorkspace(dir), conversationId: 'c1' });
  await writeFile(path.join(dir, 'a.py'), 'def greet():\n    print("hi")\n\ndef main():\n    greet()\n');
  await writeFile(path.join(dir, 'b.txt'), 'alpha\nbeta\ngamma\n');
});

afterAll(async () => {
  await Promise.all(dirs.map((created) => rm(created, { recursive: true, force: true })));
});

describe('apply_patch', () => {
  it('applies the "*** Begin Patch" format: update, add, delete and move', async () => {
    const result = await apply(`*** Begin Patch
*** Update File: a.py
@@ def greet():
-    print("hi")
+    print("hello")
*** Add File: new/c.txt
+first
+second
*** Delete File: b.txt
*** End Patch`);
    expect(result.isError).toBe(false);
    expect(await read('a.py')).toBe('def greet():\n    print("hello")\n\ndef main():\n    greet()\n');
    expect(await read('new/c.txt')).toBe('first\nsecond\n');
    expect(await exists('b.txt')).toBe(false);
    const moved = await apply(
      '*** Begin Patch\n*** Update File: new/c.txt\n*** Move to: d.txt\n@@\n first\n-second\n+2nd\n*** End Patch',
    );
    expect(moved.isError).toBe(false);
    expect(await read('d.txt')).toBe('first\n2nd\n');
    expect(await exists('new/c.txt')).toBe(false);
  });

  it('applies a unified diff', async () => {
    const result = await apply(`diff --git a/b.txt b/b.txt
--- a/b.txt
+++ b/b.txt
@@ -1,3 +1,3 @@
 alpha
-beta
+BETA
 gamma
--- /dev/null
+++ b/added.txt
@@ -0,0 +1,2 @@
+one
+two
`);
    expect(result.isError).toBe(false);
    expect(await read('b.txt')).toBe('alpha\nBETA\ngamma\n');
    expect(await read('added.txt')).toBe('one\ntwo\n');
  });

  it('is atomic: a failing hunk changes nothing', async () => {
    const result = await apply(`*** Begin Patch
*** Update File: b.txt
@@
-alpha
+ALPHA
*** Update File: a.py
@@
-this line does not exist
+x
*** End Patch`);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('Hunk 1 of');
    expect(result.text).toContain('this line does not exist');
    expect(result.text).toContain('Nothing was changed');
    expect(await read('b.txt')).toBe('alpha\nbeta\ngamma\n');
  });

  it('reports malformed patches, missing files and paths outside the workspace', async () => {
    expect((await apply('just some text')).text).toContain('could not be parsed');
    expect((await apply('*** Begin Patch\n*** Frobnicate: x\n*** End Patch')).text).toContain(
      'expected "*** Add File:"',
    );
    expect((await apply('*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch')).text).toContain(
      'does not exist',
    );
    expect((await apply('*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch')).text).toContain('already exists');
    const outside = await apply('*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch');
    expect(outside.isError).toBe(true);
    expect(outside.text).toContain('outside the workspace');
  });

  it('refuses a file past the editor’s size bound without reading it (a sparse 64 GiB file)', async () => {
    await writeFile(path.join(dir, 'huge.txt'), 'alpha\n');
    await truncate(path.join(dir, 'huge.txt'), 64 * 1024 ** 3);
    const started = Date.now();
    const result = await apply('*** Begin Patch\n*** Update File: huge.txt\n@@\n-alpha\n+omega\n*** End Patch');
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('is 68,719,476,736 bytes, too large for the editor (at most 10,485,760).');
    expect(result.text).toContain('apply_patch only edits text files up to that size.');
  });

  it('declares the files it touches as resources', () => {
    const resources = tool.resources(
      {
        patch:
          '*** Begin Patch\n*** Add File: x.txt\n+1\n*** Update File: y.txt\n*** Move to: z.txt\n@@\n-a\n+b\n*** End Patch',
      },
      context,
    );
    expect(resources).toEqual(
      [`file:${dir}/x.txt`, `file:${dir}/y.txt`, `file:${dir}/z.txt`].map((key) =>
        key.replace(dir, context.workspace.root),
      ),
    );
  });
});
