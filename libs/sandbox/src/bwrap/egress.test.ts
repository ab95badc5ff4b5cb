import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../sandbox.js';
import { DEFAULT_SANDBOX_SETTINGS, NetworkMode } from '../settings.js';
import { createBwrapProvider } from './bwrap-provider.js';

/**
 * A test host of our own: a network namespace with a veth pair to this machine's namespace and
 * a TCP server in it. The only place egress traffic is sent to; nothing leaves the machine.
 */
function canMakeTestHost(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const available = canMakeTestHost();
if (!available) console.warn('egress test SKIPPED: it needs root and iproute2 (`ip netns`) to make its own test host');

const suffix = String(process.pid % 100_000);
const namespace = `flotilla-egress-${suffix}`;
const hostSide = `fe${suffix}h`;
const testSide = `fe${suffix}t`;
const octet = 16 + (process.pid % 200);
const testHostAddress = `10.251.${octet}.2`;
const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'ignore' });

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

describe.skipIf(!available)('the egress network mode', () => {
  let root: string;
  let server: ChildProcess | undefined;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-egress-'));
    await mkdir(path.join(root, 'workspace'));
    ip('netns', 'add', namespace);
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', testSide);
    ip('link', 'set', testSide, 'netns', namespace);
    ip('addr', 'add', `10.251.${octet}.1/30`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    ip('netns', 'exec', namespace, 'ip', 'addr', 'add', `${testHostAddress}/30`, 'dev', testSide);
    ip('netns', 'exec', namespace, 'ip', 'link', 'set', testSide, 'up');
    ip('netns', 'exec', namespace, 'ip', 'link', 'set', 'lo', 'up');
    server = spawn(
      'ip',
      [
        'netns',
        'exec',
        namespace,
        process.execPath,
        '-e',
        `require('net').createServer((s) => s.end('hello from the test host\\n')).listen(8099, '${testHostAddress}', () => console.log('listening'))`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
      server!.once('exit', (code) => reject(new Error(`the test host's server exited (${code})`)));
    });
  });
  afterAll(async () => {
    server?.kill('SIGKILL');
    for (const args of [
      ['netns', 'del', namespace],
      ['link', 'del', hostSide],
    ]) {
      try {
        ip(...args);
      } catch {
        // already gone with the namespace
      }
    }
    await rm(root, { recursive: true, force: true });
  });

  it('reaches a host outside the machine’s loopback in egress mode, and nothing in mode none', async () => {
    const probe = `(exec 3<>/dev/tcp/${testHostAddress}/8099 && cat <&3) 2>&1 || echo unreachable`;
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
