import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Directories never searched: hidden ones (`.git`, …) and dependency trees. */
const SKIPPED_DIRECTORIES = new Set(['node_modules']);

export type WalkedFile = { readonly absolute: string; readonly relative: string };

export type WalkLimits = { readonly maxFiles: number; readonly signal?: AbortSignal };

/**
 * Files below `root` (depth first, symlinks not followed), skipping hidden
 * entries and node_modules. Stops after `maxFiles`; `truncated` says so.
 */
export async function walkFiles(root: string, limits: WalkLimits): Promise<{ files: WalkedFile[]; truncated: boolean }> {
  const files: WalkedFile[] = [];
  const rootInfo = await stat(root);
  if (rootInfo.isFile()) return { files: [{ absolute: root, relative: path.basename(root) }], truncated: false };
  const pending = [root];
  while (pending.length > 0) {
    if (limits.signal?.aborted) return { files, truncated: true };
    const directory = pending.pop() as string;
    let entries;
    try {
      entries = await readdir(directory, { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => b.name.localeCompare(a.name));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const absolute = path.join(directory, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) pending.push(absolute);
      } else if (entry.isFile()) {
        files.push({ absolute, relative: path.relative(root, absolute).split(path.sep).join('/') });
        if (files.length >= limits.maxFiles) return { files, truncated: true };
      }
    }
  }
  return { files, truncated: false };
}

/** Modification times, newest first; files that vanished sort last. */
export async function sortByMtime<T extends WalkedFile>(files: readonly T[]): Promise<T[]> {
  const withTimes = await Promise.all(
    files.map(async (file) => ({ file, mtime: await stat(file.absolute).then((info) => info.mtimeMs, () => 0) })),
  );
  return withTimes.sort((a, b) => b.mtime - a.mtime || a.file.relative.localeCompare(b.file.relative)).map((entry) => entry.file);
}
