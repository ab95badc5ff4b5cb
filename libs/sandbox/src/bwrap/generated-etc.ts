import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SANDBOX_HOME } from '../environment.js';

/** The user a sandboxed process is, as it sees itself. */
export const SANDBOX_USER = { name: 'agent', uid: 1000, gid: 1000 } as const;

/** slirp4netns's built-in DNS forwarder, as the sandbox sees it. */
export const SLIRP_DNS = '10.0.2.3';

/**
 * /etc files made for sandboxes rather than taken from the host: who the user is, the host name,
 * and where names resolve (only in egress mode). Written once per provider, bound read-only.
 */
export function writeGeneratedEtc(directory: string): { files: Record<string, string>; egressResolvConf: string } {
  mkdirSync(directory, { recursive: true });
  const contents: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${SANDBOX_USER.name}:x:${SANDBOX_USER.uid}:${SANDBOX_USER.gid}:agent:${SANDBOX_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${SANDBOX_USER.name}:x:${SANDBOX_USER.gid}:\nnogroup:x:65534:\n`,
    hostname: 'sandbox\n',
    hosts: '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost ip6-loopback\n',
    'resolv.conf': '# no network in this sandbox\n',
  };
  const files: Record<string, string> = {};
  for (const [name, text] of Object.entries(contents)) {
    const path = join(directory, name);
    writeFileSync(path, text, { mode: 0o644 });
    files[`/etc/${name}`] = path;
  }
  const egressResolvConf = join(directory, 'resolv.conf.egress');
  writeFileSync(egressResolvConf, `nameserver ${SLIRP_DNS}\noptions edns0\n`, { mode: 0o644 });
  return { files, egressResolvConf };
}
