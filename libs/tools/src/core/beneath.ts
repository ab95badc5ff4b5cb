import { constants } from 'node:fs';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * File operations below a root that never follow a symlink on the way: each folder is opened
 * on its own, relative to the one before (through /proc/self/fd, Linux's openat), with
 * O_NOFOLLOW. A path the agent's processes swap for a symlink between a check and the operation
 * fails instead of leading the service (possibly root) out of the workspace.
 */
const PROC_FD = '/proc/self/fd';

/** The entry `name` of an open folder, as a path that resolves through the folder itself (never through its path). */
export const at = (directory: FileHandle, name: string): string => `${PROC_FD}/${directory.fd}/${name}`;

/** The components of `target` below `root` (both absolute; `target` inside `root`). */
export function componentsBelow(root: string, target: string): string[] {
  const relative = path.relative(root, target);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative))
    throw new Error(`${target} is not below ${root}`);
  return relative.split(path.sep);
}

/** Opens the folder `names` leads to from `root`, making missing ones when `create` (and handing each new one to `made`). */
export async function openFolder(
  root: string,
  names: readonly string[],
  create: ((folder: FileHandle) => Promise<void>) | undefined,
): Promise<FileHandle> {
  let folder = await open(root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    for (const name of names) {
      let made = false;
      if (create) {
        made = await mkdir(at(folder, name)).then(
          () => true,
          (error: NodeJS.ErrnoException) => {
            if (error.code === 'EEXIST') return false;
            throw error;
          },
        );
      }
      const next = await open(at(folder, name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      await folder.close();
      folder = next;
      if (made && create) await create(folder);
    }
    return folder;
  } catch (error) {
    await folder.close().catch(() => undefined);
    throw error;
  }
}

export type BeneathOptions = {
  /** Make missing folders on the way (writes). */
  readonly createFolders?: boolean;
  /** Called with each folder made and the file opened for writing: e.g. to give them to the sandbox's user. */
  readonly adopt?: (handle: FileHandle) => Promise<void>;
};

/** Opens `target` below `root` with `flags` (O_NOFOLLOW added) without following any symlink. */
export async function openBeneath(
  root: string,
  target: string,
  flags: number,
  options: BeneathOptions = {},
): Promise<FileHandle> {
  const names = componentsBelow(root, target);
  const folder = await openFolder(
    root,
    names.slice(0, -1),
    options.createFolders ? (options.adopt ?? (async () => undefined)) : undefined,
  );
  try {
    return await open(at(folder, names[names.length - 1]!), flags | constants.O_NOFOLLOW, 0o644);
  } finally {
    await folder.close();
  }
}

export async function readBeneath(root: string, target: string): Promise<Buffer> {
  const handle = await openBeneath(root, target, constants.O_RDONLY);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

export async function writeBeneath(
  root: string,
  target: string,
  data: string | Uint8Array,
  options: Pick<BeneathOptions, 'adopt'> = {},
): Promise<void> {
  const handle = await openBeneath(root, target, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, {
    createFolders: true,
    ...options,
  });
  try {
    await handle.writeFile(data);
    await options.adopt?.(handle);
  } finally {
    await handle.close();
  }
}

/** Removes the file `target` below `root` (a symlink there is removed itself, never followed); nothing when it is missing. */
export async function removeBeneath(root: string, target: string): Promise<void> {
  const names = componentsBelow(root, target);
  let folder: FileHandle;
  try {
    folder = await openFolder(root, names.slice(0, -1), undefined);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    await unlink(at(folder, names[names.length - 1]!)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  } finally {
    await folder.close();
  }
}
