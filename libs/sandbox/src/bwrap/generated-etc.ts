import { cpSync, existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SANDBOX_HOME } from '../environment.js';

/** The user a sandboxed process is, as it sees itself. */
export const SANDBOX_USER = { name: 'agent', uid: 1000, gid: 1000 } as const;

/** slirp4netns's built-in DNS forwarder, as the sandbox sees it. */
export const SLIRP_DNS = '10.0.2.3';

/**
 * What of the host's /etc a sandboxed process needs to run ordinary tools (the dynamic loader's
 * cache, Debian's alternatives, TLS roots, time zone, name service order). Nothing else of /etc
 * is seen: no service configuration, no credentials.
 */
const HOST_ENTRIES = [
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

/**
 * The sandboxes' /etc, made once per provider and bound read-only as a whole (one mount instead
 * of one per entry: each costs bwrap about 0.2 ms at every start): copies of the host entries
 * above (symlinks kept as they are: they point into /usr, which the sandbox sees), and files made
 * for sandboxes: who the user is, the host name, and where names resolve (egress mode only).
 * A change of the host's /etc reaches sandboxes when the service restarts.
 */
export function prepareEtc(directory: string, egress: boolean): void {
  rmSync(directory, { recursive: true, force: true });
  mkdirSync(directory, { recursive: true, mode: 0o755 });
  for (const entry of HOST_ENTRIES) {
    const source = join('/etc', entry);
    if (!existsSync(source)) continue;
    try {
      // only what every user of the host may read (never /etc/ssl/private, say)
      cpSync(source, join(directory, entry), {
        recursive: true,
        verbatimSymlinks: true,
        preserveTimestamps: true,
        filter: worldReadable,
      });
    } catch {
      // an entry the service may not read (or a dangling link) is left out
    }
  }
  const made: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${SANDBOX_USER.name}:x:${SANDBOX_USER.uid}:${SANDBOX_USER.gid}:agent:${SANDBOX_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${SANDBOX_USER.name}:x:${SANDBOX_USER.gid}:\nnogroup:x:65534:\n`,
    hostname: 'sandbox\n',
    hosts: '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n',
    'resolv.conf': egress ? `nameserver ${SLIRP_DNS}\noptions edns0\n` : '# no network in this sandbox\n',
  };
  for (const [name, text] of Object.entries(made)) writeFileSync(join(directory, name), text, { mode: 0o644 });
}

/** Symlinks, and files and folders any user may read (folders: and enter). */
function worldReadable(source: string): boolean {
  try {
    const info = lstatSync(source);
    if (info.isSymbolicLink()) return true;
    return (info.mode & 0o004) !== 0 && (!info.isDirectory() || (info.mode & 0o001) !== 0);
  } catch {
    return false;
  }
}
