import { startTestHost, testHostUnavailable, type TestHost } from '@flotilla/testing';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode } from '../settings.js';
import { createBwrapProvider } from './bwrap-provider.js';

const unavailable = testHostUnavailable();
if (unavailable) console.warn(`egress test SKIPPED: ${unavailable} to make its own test host`);

async function run(sandbox: Sandbox, script: string): Promise<string> {
  const child = await sandbox.spawn('bash', ['-c', script]);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stdin.end();
  const timer = setTimeout(() => child.signal('SIGKILL'), 20_000);
  await child.exited;
  clearTimeout(timer);
  return output;
}

describe.skipIf(unavailable !== undefined)('the egress network mode', () => {
  let root: string;
  let host: TestHost;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-egress-'));
    await mkdir(path.join(root, 'workspace'));
    host = await startTestHost(
      'egress',
      "require('net').createServer((s) => s.end('hello from the test host\\n')).listen(Number(process.env.PORT), process.env.HOST, () => console.log('listening'))",
    );
  });
  afterAll(async () => {
    host?.stop();
    await rm(root, { recursive: true, force: true });
  });

  it('reaches a host outside the machine’s loopback in egress mode, and nothing in mode none', async () => {
    const probe = `(exec 3<>/dev/tcp/${host.address}/${host.port} && cat <&3) 2>&1 || echo unreachable`;
    const results: Record<string, string> = {};
    for (const network of [NetworkMode.Egress, NetworkMode.None]) {
      const provider = createBwrapProvider(
        { ...DEFAULT_SANDBOX_SETTINGS, network },
        { stateDir: path.join(root, `state-${network}`), ownedRoot: root },
      );
      const sandbox = await provider.open({ id: `egress-${network}`, workspace: path.join(root, 'workspace') });
      try {
        results[network] = await run(sandbox, `${probe}; cat /etc/resolv.conf`);
      } finally {
        await sandbox.close();
      }
    }
    expect(results[NetworkMode.Egress]).toContain('hello from the test host');
    expect(results[NetworkMode.Egress]).toContain('nameserver 10.0.2.3');
    expect(results[NetworkMode.None]).not.toContain('hello from the test host');
    expect(results[NetworkMode.None]).toContain('unreachable');
  });
});
