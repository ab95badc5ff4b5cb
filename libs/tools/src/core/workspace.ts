import { constants } from 'node:fs';
import { open, readFile, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { openBeneath, readBeneath, removeBeneath, writeBeneath } from './beneath.js';
import { ToolError, ToolErrorCode } from './errors.js';
import {
  listBeneath,
  openRegularBeneath,
  replaceBeneath,
  type DirectoryListing,
  type ListLimits,
  type OpenedFile,
} from './workspace-entries.js';

/** The directory tree a conversation's tools may touch. */
export type Workspace = {
  /** Absolute, symlink-free path of the workspace root on this host. */
  readonly root: string;
  /** The root as the agent sees it (its sandbox's `/workspace`); the host root when unsandboxed. */
  readonly shownRoot: string;
  /**
   * Resolve a path given by the model (absolute, under the root or the shown root, or relative
   * to the root) to an absolute host path inside the workspace. Throws a `ToolError` with code
   * `path_outside_workspace` when the path, or the target of a symlink on it, leaves the root.
   */
  resolvePath(requested: string): Promise<string>;
  /** As resolvePath, and also paths in the read-only area (the service's saved outputs), for reading only. */
  resolveForReading(requested: string): Promise<string>;
  /** Text with every host path of the workspace written as the agent sees it. */
  show(text: string): string;
  /**
   * Read a file (a host path from resolvePath or resolveForReading). In the workspace, no symlink
   * is followed on the way to it, so a path swapped since it was resolved fails instead of
   * leading outside; a symlink inside the workspace is read through to its target.
   */
  readFile(hostPath: string): Promise<Buffer>;
  /** Open a file for reading the same way, to read a part of it (e.g. of a file too large to read whole); the caller closes it. */
  openFile(hostPath: string): Promise<FileHandle>;
  /** Write a file the same way, making missing folders; what it makes belongs to the sandbox's user. */
  writeFile(hostPath: string, data: string | Uint8Array): Promise<void>;
  /** Remove a file the same way (nothing when it is missing). */
  removeFile(hostPath: string): Promise<void>;
  /**
   * The entries of a folder (a host path from resolvePath, or the root), one level, no link
   * followed on the way (a link inside the workspace to a folder in it is listed through).
   * Throws a `ToolError`: not_found, not_a_directory, path_outside_workspace.
   */
  listDirectory(hostPath: string, limits: ListLimits): Promise<DirectoryListing>;
  /** Open a regular file for reading as readFile does, never blocking on a FIFO; the caller closes it. Throws a `ToolError`: not_found, is_a_directory, not_a_regular_file, path_outside_workspace. */
  openRegularFile(hostPath: string): Promise<OpenedFile>;
  /**
   * Replace a file at once (replaceBeneath): `fill` writes the new one beside it; missing folders
   * are made; a link at the path is replaced, never followed. What it makes belongs to the
   * sandbox's user. Throws a `ToolError`: is_a_directory, not_a_directory, path_outside_workspace.
   */
  replaceFile(hostPath: string, fill: (handle: FileHandle) => Promise<void>): Promise<{ created: boolean }>;
};

export type WorkspaceOptions = {
  /** The root as the agent sees it (default: the host root). */
  readonly shownRoot?: string;
  /** The host user that owns what the agent writes, when not this process's. */
  readonly owner?: { readonly uid: number; readonly gid: number } | undefined;
  /** A directory the agent may read but not change (the sandbox's private directory), on the host and as shown. */
  readonly readOnly?: { readonly root: string; readonly shownRoot: string };
};

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** realpath of the longest existing prefix of `target`, with the missing tail appended. */
async function realpathOfExistingPrefix(target: string): Promise<string> {
  const missing: string[] = [];
  let current = target;
  for (;;) {
    try {
      const real = await realpath(current);
      return path.join(real, ...missing.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return target;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

function outside(requested: string, root: string, reason: string): ToolError {
  return new ToolError(
    ToolErrorCode.PathOutsideWorkspace,
    `The path ${requested} is outside the workspace ${root}${reason}. Use a path inside the workspace (absolute, or relative to ${root}).`,
  );
}

class LocalWorkspace implements Workspace {
  readonly shownRoot: string;

  constructor(
    readonly root: string,
    private readonly options: WorkspaceOptions,
  ) {
    this.shownRoot = options.shownRoot ?? root;
  }

  show(text: string): string {
    let shown = this.shownRoot === this.root ? text : text.replaceAll(this.root, this.shownRoot);
    const readOnly = this.options.readOnly;
    if (readOnly && readOnly.root !== readOnly.shownRoot) shown = shown.replaceAll(readOnly.root, readOnly.shownRoot);
    return shown;
  }

  async resolveForReading(requested: string): Promise<string> {
    const readOnly = this.options.readOnly;
    if (!readOnly || !path.isAbsolute(requested)) return this.resolvePath(requested);
    const absolute = path.resolve(requested);
    const base = isInside(readOnly.shownRoot, absolute)
      ? readOnly.shownRoot
      : isInside(readOnly.root, absolute)
        ? readOnly.root
        : undefined;
    if (base === undefined) return this.resolvePath(requested);
    const host = path.join(readOnly.root, path.relative(base, absolute));
    const real = await realpathOfExistingPrefix(host);
    const realRoot = await realpathOfExistingPrefix(readOnly.root);
    if (!isInside(realRoot, real))
      throw outside(requested, this.shownRoot, ` (a symlink on it points to ${this.show(real)})`);
    return host;
  }

  async readFile(hostPath: string): Promise<Buffer> {
    const readOnly = this.options.readOnly;
    // the service's own area: nothing of the agent's can be in it
    if (readOnly && isInside(readOnly.root, hostPath)) return readFile(hostPath);
    return readBeneath(this.root, await this.#realTarget(hostPath));
  }

  async openFile(hostPath: string): Promise<FileHandle> {
    const readOnly = this.options.readOnly;
    if (readOnly && isInside(readOnly.root, hostPath)) return open(hostPath, constants.O_RDONLY);
    return openBeneath(this.root, await this.#realTarget(hostPath), constants.O_RDONLY);
  }

  async writeFile(hostPath: string, data: string | Uint8Array): Promise<void> {
    const owner = this.options.owner;
    const adopt = owner ? (handle: FileHandle) => handle.chown(owner.uid, owner.gid) : undefined;
    await writeBeneath(this.root, await this.#realTarget(hostPath), data, adopt ? { adopt } : {});
  }

  async removeFile(hostPath: string): Promise<void> {
    // the link itself when the path is one: never what it points to
    const parent = await realpathOfExistingPrefix(path.dirname(hostPath));
    if (!isInside(this.root, parent)) throw outside(this.show(hostPath), this.shownRoot, '');
    await removeBeneath(this.root, path.join(parent, path.basename(hostPath)));
  }

  async listDirectory(hostPath: string, limits: ListLimits): Promise<DirectoryListing> {
    const real = await realpathOfExistingPrefix(hostPath);
    if (!isInside(this.root, real))
      throw outside(this.show(hostPath), this.shownRoot, ` (a symlink on it points to ${this.show(real)})`);
    return this.#entryErrors(hostPath, () => listBeneath(this.root, real, limits));
  }

  async openRegularFile(hostPath: string): Promise<OpenedFile> {
    const real = await this.#realTarget(hostPath);
    return this.#entryErrors(hostPath, () => openRegularBeneath(this.root, real));
  }

  async replaceFile(hostPath: string, fill: (handle: FileHandle) => Promise<void>): Promise<{ created: boolean }> {
    // the link itself when the path is one (it is replaced): only the folders on the way are resolved
    const parent = await realpathOfExistingPrefix(path.dirname(hostPath));
    if (!isInside(this.root, parent))
      throw outside(this.show(hostPath), this.shownRoot, ` (a symlink on it points to ${this.show(parent)})`);
    const owner = this.options.owner;
    const adopt = owner ? (handle: FileHandle) => handle.chown(owner.uid, owner.gid) : undefined;
    return this.#entryErrors(hostPath, () =>
      replaceBeneath(this.root, path.join(parent, path.basename(hostPath)), fill, adopt ? { adopt } : {}),
    );
  }

  /** What the file system said about a path, as the errors a caller can act on. */
  async #entryErrors<T>(hostPath: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      const shown = this.show(hostPath);
      switch ((error as NodeJS.ErrnoException).code) {
        case 'ENOENT':
          throw new ToolError(ToolErrorCode.NotFound, `${shown} does not exist.`, { cause: error });
        case 'ENOTDIR':
          throw new ToolError(ToolErrorCode.NotADirectory, `${shown} is not a folder (or a part of it is a file).`, {
            cause: error,
          });
        case 'EISDIR':
          throw new ToolError(ToolErrorCode.IsADirectory, `${shown} is a folder.`, { cause: error });
        case 'ENOTREG':
          throw new ToolError(
            ToolErrorCode.NotARegularFile,
            `${shown} is not a regular file (a FIFO, socket or device).`,
            { cause: error },
          );
        case 'ELOOP':
          // a folder on the way became a link since the path was resolved
          throw outside(shown, this.shownRoot, ' (a symlink on it changed while it was read)');
        default:
          throw error;
      }
    }
  }

  /** Where the path leads now (symlinks inside the workspace resolved), refused when that is outside. */
  async #realTarget(hostPath: string): Promise<string> {
    const real = await realpathOfExistingPrefix(hostPath);
    if (!isInside(this.root, real) || real === this.root)
      throw outside(
        this.show(hostPath),
        this.shownRoot,
        real === this.root ? ' (it is the workspace itself)' : ` (a symlink on it points to ${this.show(real)})`,
      );
    return real;
  }

  async resolvePath(requested: string): Promise<string> {
    if (requested.includes('\0')) throw outside(JSON.stringify(requested), this.shownRoot, ' (it contains a NUL byte)');
    const absolute = path.resolve(this.root, this.#toHost(requested));
    if (!isInside(this.root, absolute)) throw outside(requested, this.shownRoot, '');
    const real = await realpathOfExistingPrefix(absolute);
    if (!isInside(this.root, real))
      throw outside(requested, this.shownRoot, ` (a symlink on it points to ${this.show(real)})`);
    return absolute;
  }

  /** A path under the shown root, as a host path; any other path as it is. */
  #toHost(requested: string): string {
    if (this.shownRoot === this.root || !path.isAbsolute(requested)) return requested;
    const relative = path.relative(this.shownRoot, path.resolve(requested));
    return relative.startsWith('..') || path.isAbsolute(relative) ? requested : path.join(this.root, relative);
  }
}

/** Open a workspace rooted at an existing directory. */
export async function openWorkspace(root: string, options: WorkspaceOptions = {}): Promise<Workspace> {
  return new LocalWorkspace(await realpath(path.resolve(root)), options);
}
