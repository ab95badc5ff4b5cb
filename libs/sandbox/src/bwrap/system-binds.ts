import { lstatSync, readlinkSync } from 'node:fs';

/** Top-level entries that merged-/usr systems make symlinks into /usr, bound as they are on the host. */
const ROOT_ENTRIES = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * Files and folders of the host's /etc a sandboxed process needs to run ordinary tools (the
 * dynamic loader's cache, Debian's alternatives, TLS roots, time zone, name service order).
 * Nothing else of /etc is seen: no service configuration, no credentials.
 */
const ETC_ENTRIES = [
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'ssl',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'host.conf',
  'protocols',
  'services',
  'mime.types',
  'bash.bashrc',
  'inputrc',
  'profile',
  'gitconfig',
  'magic',
  'mailcap',
  'python3',
  'perl',
  'vim',
  'xdg',
];

function kindOf(path: string): 'missing' | 'symlink' | 'other' {
  try {
    return lstatSync(path).isSymbolicLink() ? 'symlink' : 'other';
  } catch {
    return 'missing';
  }
}

/** bwrap arguments that show the host's system read-only: /usr, the root symlinks, a few /etc entries, extra paths. */
export function systemBindArguments(extraReadOnly: readonly string[]): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const entry of ROOT_ENTRIES) {
    const kind = kindOf(entry);
    if (kind === 'symlink') args.push('--symlink', readlinkSync(entry), entry);
    else if (kind === 'other') args.push('--ro-bind', entry, entry);
  }
  for (const entry of ETC_ENTRIES) {
    const path = `/etc/${entry}`;
    if (kindOf(path) !== 'missing') args.push('--ro-bind', path, path);
  }
  for (const path of extraReadOnly) args.push('--ro-bind-try', path, path);
  return args;
}
