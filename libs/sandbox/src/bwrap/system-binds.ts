import { lstatSync, readlinkSync } from 'node:fs';

/** Top-level entries that merged-/usr systems make symlinks into /usr, bound as they are on the host. */
const ROOT_ENTRIES = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

function kindOf(path: string): 'missing' | 'symlink' | 'other' {
  try {
    return lstatSync(path).isSymbolicLink() ? 'symlink' : 'other';
  } catch {
    return 'missing';
  }
}

/**
 * bwrap arguments that show the host's system read-only: /usr, the root symlinks, the prepared
 * /etc (prepareEtc), and the operator's extra paths.
 */
export function systemBindArguments(etcDirectory: string, extraReadOnly: readonly string[]): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const entry of ROOT_ENTRIES) {
    const kind = kindOf(entry);
    if (kind === 'symlink') args.push('--symlink', readlinkSync(entry), entry);
    else if (kind === 'other') args.push('--ro-bind', entry, entry);
  }
  args.push('--ro-bind', etcDirectory, '/etc');
  for (const path of extraReadOnly) args.push('--ro-bind-try', path, path);
  return args;
}
