import { createHash } from 'node:crypto';
import path from 'node:path';
import { SANDBOX_PRIVATE, SANDBOX_WORKSPACE } from './environment.js';

/**
 * `hostPath` as a sandbox sees it, given where each host directory it sees is mounted (first
 * match wins); throws for a path in none of them.
 */
export function insidePath(hostPath: string, mounts: readonly (readonly [host: string, inside: string])[]): string {
  for (const [host, inside] of mounts) {
    const relative = path.relative(host, hostPath);
    if (relative.startsWith('..') || path.isAbsolute(relative)) continue;
    return relative === '' ? inside : path.posix.join(inside, ...relative.split(path.sep));
  }
  throw new Error(`${hostPath} is not in a directory the sandbox sees`);
}

/** `hostPath` as an isolating sandbox sees it: its workspace at /workspace, its private directory at /run/flotilla. */
export function isolatedInsidePath(hostPath: string, workspace: string, privateDir: string): string {
  return insidePath(hostPath, [
    [workspace, SANDBOX_WORKSPACE],
    [privateDir, SANDBOX_PRIVATE],
  ]);
}

/** A conversation's private directory when the service gives none: one per sandbox id under `stateDir`. */
export function defaultPrivateDir(stateDir: string, id: string): string {
  return path.join(stateDir, 'conversations', createHash('sha256').update(id).digest('hex').slice(0, 32));
}
