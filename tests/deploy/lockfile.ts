// What `npm ci --omit=dev` installs, computed from package-lock.json alone: the packages reachable
// from the root's and the workspaces' production dependencies (dependencies, optional and peer
// dependencies), resolved the way node resolves them (the nearest node_modules up the tree).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

type LockPackage = {
  readonly name?: string;
  readonly version?: string;
  readonly link?: boolean;
  readonly resolved?: string;
  readonly dev?: boolean;
  /** A dev dependency that is also an optional (peer) dependency of a production package: `npm ci --omit=dev` installs it. */
  readonly devOptional?: boolean;
  readonly optional?: boolean;
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  readonly devDependencies?: Record<string, string>;
  readonly workspaces?: readonly string[];
};
export type Lockfile = { readonly lockfileVersion: number; readonly packages: Record<string, LockPackage> };

export async function readLockfile(root: string): Promise<Lockfile> {
  const lock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as Lockfile;
  if (lock.lockfileVersion < 2 || typeof lock.packages !== 'object')
    throw new Error('package-lock.json: lockfileVersion 2 or 3 with "packages" expected');
  return lock;
}

/** The lockfile path a dependency `name` of the package at `from` resolves to (node's lookup), or undefined. */
function resolveFrom(lock: Lockfile, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base === '' ? '' : `${base}/`}node_modules/${name}`;
    if (lock.packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const at = base.lastIndexOf('/node_modules/');
    base = at < 0 ? '' : base.slice(0, at);
  }
}

/** The lockfile paths (node_modules/… entries and workspace folders) a production install holds. */
export function productionPackages(lock: Lockfile): Set<string> {
  const reached = new Set<string>();
  const queue: string[] = [''];
  const root = lock.packages[''];
  for (const workspace of Object.keys(lock.packages).filter((path) => !path.includes('node_modules/') && path !== '')) {
    if (root?.workspaces !== undefined) queue.push(workspace);
  }
  // the workspaces' links in the root's node_modules
  for (const [path, entry] of Object.entries(lock.packages))
    if (entry.link === true && entry.resolved !== undefined && !entry.resolved.includes('node_modules/'))
      queue.push(path);
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (reached.has(path)) continue;
    reached.add(path);
    const entry = lock.packages[path];
    if (entry === undefined) continue;
    if (entry.link === true && entry.resolved !== undefined) {
      queue.push(entry.resolved);
      continue;
    }
    const required = { ...entry.dependencies, ...entry.optionalDependencies };
    const optionalPeers: string[] = [];
    for (const [peer] of Object.entries(entry.peerDependencies ?? {})) {
      if (entry.peerDependenciesMeta?.[peer]?.optional !== true) required[peer] = '*';
      else optionalPeers.push(peer);
    }
    for (const name of Object.keys(required)) {
      const target = resolveFrom(lock, path, name);
      if (target !== undefined) queue.push(target);
    }
    // an optional peer is installed when the tree holds it anyway: npm flags one a dev dependency
    // also brings `devOptional`, and --omit=dev keeps it
    for (const name of optionalPeers) {
      const target = resolveFrom(lock, path, name);
      if (target !== undefined && lock.packages[target]?.dev !== true) queue.push(target);
    }
  }
  return reached;
}

/** The package name of a lockfile path (node_modules/a/node_modules/@b/c → @b/c). */
export function packageName(path: string): string {
  const at = path.lastIndexOf('node_modules/');
  return at < 0 ? path : path.slice(at + 'node_modules/'.length);
}
