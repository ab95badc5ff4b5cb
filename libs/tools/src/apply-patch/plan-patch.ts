import { stat } from 'node:fs/promises';
import type { Workspace } from '../core/workspace.js';
import { readTextFile } from '../file-editor/text-file.js';
import { applyHunks } from './apply-hunks.js';
import type { FileChange } from './patch-model.js';

/** The final content of every touched path (`null` = delete), computed before anything is written. */
export type PatchPlan = { readonly writes: ReadonlyMap<string, string | null>; readonly summary: readonly string[] };

async function exists(filePath: string): Promise<boolean> {
  return stat(filePath).then(
    () => true,
    () => false,
  );
}

/** Resolve paths and apply every hunk in memory; the first failure aborts the whole patch. */
export async function planPatch(
  changes: readonly FileChange[],
  workspace: Workspace,
): Promise<{ ok: true; plan: PatchPlan } | { ok: false; message: string }> {
  const writes = new Map<string, string | null>();
  const summary: string[] = [];
  // a file's text, null when it does not exist, or why it cannot be patched (not text, or past the editor's size bound: checked before it is read)
  const current = async (filePath: string): Promise<string | null | { readonly message: string }> => {
    if (writes.has(filePath)) return writes.get(filePath) ?? null;
    if (!(await exists(filePath))) return null;
    const read = await readTextFile(filePath, (file) => workspace.openFile(file));
    return read.ok ? read.text : { message: `${read.message} apply_patch only edits text files up to that size.` };
  };
  for (const change of changes) {
    const filePath = await workspace.resolvePath(change.path);
    const before = await current(filePath);
    if (before !== null && typeof before === 'object') return { ok: false, message: before.message };
    if (change.kind === 'add') {
      if (before !== null)
        return { ok: false, message: `Cannot add ${filePath}: it already exists. Use an update instead.` };
      writes.set(filePath, change.content);
      summary.push(`A ${filePath}`);
      continue;
    }
    if (before === null) return { ok: false, message: `Cannot ${change.kind} ${filePath}: the file does not exist.` };
    if (change.kind === 'delete') {
      writes.set(filePath, null);
      summary.push(`D ${filePath}`);
      continue;
    }
    const applied = applyHunks(before, change.hunks, filePath);
    if (!applied.ok) return applied;
    if (change.moveTo === undefined) {
      writes.set(filePath, applied.text);
      summary.push(`M ${filePath}`);
      continue;
    }
    const destination = await workspace.resolvePath(change.moveTo);
    if (destination !== filePath && (await current(destination)) !== null) {
      return { ok: false, message: `Cannot move ${filePath} to ${destination}: the destination already exists.` };
    }
    writes.set(filePath, null);
    writes.set(destination, applied.text);
    summary.push(`M ${filePath} -> ${destination}`);
  }
  return { ok: true, plan: { writes, summary } };
}
