import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, opendir, readlink, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { at, componentsBelow, openBeneath, openFolder } from './beneath.js';

/**
 * The workspace's files as a user reaches them (listed, downloaded, uploaded through the API),
 * with the same rule as the tools' reads and writes (beneath.ts): each folder on the way is opened
 * on its own with O_NOFOLLOW, so a link the agent planted or swapped in never leads the service
 * out of the workspace.
 */

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export type DirectoryEntry = {
  readonly name: string;
  readonly type: EntryType;
  /** Bytes, for files. */
  readonly size: number | null;
  readonly modifiedMs: number;
  /** What a symlink holds. */
  readonly linkTarget?: string;
};

export type DirectoryListing = { readonly entries: readonly DirectoryEntry[]; readonly truncated: boolean };

export type ListLimits = {
  /** Entries returned at most. */
  readonly maxEntries: number;
  /** Entries read from the folder at most (a huge folder costs this much, not its size); those read are sorted, then cut to maxEntries. */
  readonly maxScanned: number;
};

/** The folders on the way to `target` (the root itself, or a folder below it), opened without following a link. */
async function openDirectory(root: string, target: string): Promise<FileHandle> {
  return openFolder(root, target === root ? [] : componentsBelow(root, target), undefined);
}

function typeOf(stats: Stats): EntryType {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  return 'other';
}

/** The entries of the folder `target` (the root or below it), folders first, then by name. A link is an entry of its own, never followed. */
export async function listBeneath(root: string, target: string, limits: ListLimits): Promise<DirectoryListing> {
  const folder = await openDirectory(root, target);
  try {
    const names: string[] = [];
    let more = false;
    const directory = await opendir(at(folder, '.'));
    try {
      for await (const entry of directory) {
        if (names.length >= limits.maxScanned) {
          more = true;
          break;
        }
        names.push(entry.name);
      }
    } finally {
      await directory.close().catch(() => undefined);
    }
    const entries: DirectoryEntry[] = [];
    for (const name of names) {
      // gone since it was read: not listed
      const stats = await lstat(at(folder, name)).catch(() => undefined);
      if (!stats) continue;
      const type = typeOf(stats);
      const linkTarget = type === 'symlink' ? await readlink(at(folder, name)).catch(() => undefined) : undefined;
      entries.push({
        name,
        type,
        size: type === 'file' ? stats.size : null,
        modifiedMs: stats.mtimeMs,
        ...(linkTarget === undefined ? {} : { linkTarget }),
      });
    }
    entries.sort(
      (a, b) =>
        Number(b.type === 'directory') - Number(a.type === 'directory') ||
        (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    return { entries: entries.slice(0, limits.maxEntries), truncated: more || entries.length > limits.maxEntries };
  } finally {
    await folder.close();
  }
}

export type OpenedFile = { readonly handle: FileHandle; readonly stats: Stats };

/**
 * Opens the regular file `target` below `root` for reading, without following a link on the way
 * or at its end. Never blocks: a FIFO the agent left there is refused, not waited on (O_NONBLOCK,
 * then only a regular file is kept). Throws with `code` ENOENT, ENOTDIR, ELOOP (a link), EISDIR or
 * ENOTREG (a FIFO, socket or device).
 */
export async function openRegularBeneath(root: string, target: string): Promise<OpenedFile> {
  const handle = await openBeneath(root, target, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (stats.isDirectory()) throw Object.assign(new Error(`${target} is a folder`), { code: 'EISDIR' });
    if (!stats.isFile()) throw Object.assign(new Error(`${target} is not a regular file`), { code: 'ENOTREG' });
    return { handle, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

export type ReplaceOptions = {
  /** Called with each folder made on the way and with the new file (e.g. to give them to the sandbox's user). */
  readonly adopt?: (handle: FileHandle) => Promise<void>;
};

/**
 * Replaces the file `target` below `root` at once: `fill` writes a new file in the same folder,
 * which is then renamed over `target` (missing folders on the way are made). A link at `target`
 * is replaced itself, never followed; a folder there is refused (EISDIR). Readers see the old file
 * or the new one, never a part. Resolves whether `target` was new.
 */
export async function replaceBeneath(
  root: string,
  target: string,
  fill: (handle: FileHandle) => Promise<void>,
  options: ReplaceOptions = {},
): Promise<{ created: boolean }> {
  const names = componentsBelow(root, target);
  const name = names[names.length - 1]!;
  const folder = await openFolder(root, names.slice(0, -1), options.adopt ?? (async () => undefined));
  const temporary = `.flotilla-upload-${randomBytes(8).toString('hex')}`;
  try {
    const existing = await lstat(at(folder, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    if (existing?.isDirectory())
      throw Object.assign(new Error(`${path.basename(target)} is a folder`), { code: 'EISDIR' });
    const handle = await open(
      at(folder, temporary),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o644,
    );
    try {
      await fill(handle);
      await options.adopt?.(handle);
    } finally {
      await handle.close();
    }
    await rename(at(folder, temporary), at(folder, name));
    return { created: existing === undefined };
  } catch (error) {
    await unlink(at(folder, temporary)).catch(() => undefined);
    throw error;
  } finally {
    await folder.close();
  }
}
