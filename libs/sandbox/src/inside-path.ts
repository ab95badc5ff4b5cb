import path from 'node:path';

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
