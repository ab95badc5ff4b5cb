import { lookup } from 'node:dns/promises';
import type { Sandbox } from '../sandbox.js';

/**
 * `host:port` targets to try from inside for a NATS URL list (`nats://a:4222,tls://b:4223`):
 * the host's loopback on each port, and each host's addresses as this service resolves them
 * (the sandbox may have no DNS, or another one).
 */
export async function reachabilityTargets(natsUrls: string): Promise<string[]> {
  const targets = new Set<string>();
  for (const entry of natsUrls
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    let url: URL;
    try {
      url = new URL(entry.includes('://') ? entry : `nats://${entry}`);
    } catch {
      continue;
    }
    const port = url.port === '' ? '4222' : url.port;
    targets.add(`127.0.0.1:${port}`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host === '') continue;
    try {
      for (const { address } of await lookup(host, { all: true })) targets.add(`${address}:${port}`);
    } catch {
      // not resolvable here: nothing to try
    }
  }
  return [...targets];
}

/** Each target is tried for 3 s at most; prints the open ones. `timeout` is used where the image has it. */
const PROBE = `
for target in "$@"; do
  host=\${target%:*}; port=\${target##*:}
  if command -v timeout >/dev/null 2>&1; then
    timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' probe "$host" "$port" 2>/dev/null && echo "open=$target"
  else
    ( exec 3<>"/dev/tcp/$host/$port" ) 2>/dev/null && echo "open=$target"
  fi
done
echo checked=1
`;

/** The targets a process inside `sandbox` could connect to. */
export async function probeReachable(sandbox: Sandbox, targets: readonly string[]): Promise<string[]> {
  if (targets.length === 0) return [];
  const child = await sandbox.spawn('bash', ['-c', PROBE, 'probe', ...targets]);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.resume();
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), 5_000 + 4_000 * targets.length);
  try {
    await child.exited;
  } finally {
    clearTimeout(timer);
  }
  if (!output.includes('checked=1'))
    throw new Error(`the reachability probe did not finish: ${output.trim() || '(no output)'}`);
  return output
    .split('\n')
    .filter((line) => line.startsWith('open='))
    .map((line) => line.slice('open='.length));
}
