import { stat } from 'node:fs/promises';
import type { Workspace } from '../core/workspace.js';
import { decodeText } from '../file-editor/text-file.js';
import { applyHunks } from './apply-hunks.js';
import type { FileChange } from './patch-model.js';

/** The final content of every touched path (`null` = delete), computed before anything is written. */
export type PatchPlan = { readonly writes: ReadonlyMap<string, string | null>; readonly summary: readonly string[] };

async function exists(filePath: string): Promise<boolean> {
  return stat(filePath).then(() => true, () => false);
}



/** Resolve paths and apply every hunk in memory; the first failure aborts the whole patch. */
export async function planPatch(changes: readonly FileChange[], workspace: Workspace): Promise<{ ok: true; plan: PatchPlan } | { ok: false; message: string }> {
  const writes = new Map<string, string | null>();
  const summary: string[] = [];
  const current = async (filePath: string): Promise<string | null | undefined> => {
    if (writes.has(filePath)) return writes.get(filePath);
    return (await exists(filePath)) ? decodeText(await workspace.readFile(filePath)) : null;
  };
  for (const change of changes) {
    const filePath = await workspace.resolvePath(change.path);
    const before = await current(filePath);
    if (before === undefined) return { ok: false, message: `${filePath} is not a UTF-8 text file; apply_patch only edits text files.` };
    if (change.kind === 'add') {
      if (before !== null) return { ok: false, message: `Cannot add ${filePath}: it already exists. Use an update instead.` };
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
