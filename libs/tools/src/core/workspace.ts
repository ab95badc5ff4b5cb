import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolError, ToolErrorCode } from './errors.js';

/** The directory tree a conversation's tools may touch. */
export type Workspace = {
  /** Absolute, symlink-free path of the workspace root. */
  readonly root: string;
  /**
   * Resolve a path given by the model (absolute, or relative to the root) to an
   * absolute path inside the workspace. Throws a `ToolError` with code
   * `path_outside_workspace` when the path, or the target of a symlink on it,
   * leaves the root.
   */
  resolvePath(requested: string): Promise<string>;
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
  constructor(readonly root: string) {}

  async resolvePath(requested: string): Promise<string> {
    if (requested.includes('\0')) throw outside(JSON.stringify(requested), this.root, ' (it contains a NUL byte)');
    const absolute = path.resolve(this.root, requested);
    if (!isInside(this.root, absolute)) throw outside(requested, this.root, '');
    const real = await realpathOfExistingPrefix(absolute);
    if (!isInside(this.root, real)) throw outside(requested, this.root, ` (a symlink on it points to ${real})`);
    return absolute;
  }
}

/** Open a workspace rooted at an existing directory. */
export async function openWorkspace(root: string): Promise<Workspace> {
  return new LocalWorkspace(await realpath(path.resolve(root)));
}
