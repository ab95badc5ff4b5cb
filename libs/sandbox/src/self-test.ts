import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { SandboxError, SandboxErrorCode } from './errors.js';
import type { SandboxProvider } from './sandbox.js';

/** What a probe run inside a sandbox saw, one `key=value` per line. */
export type ProbeReport = Readonly<Record<string, string>>;

/**
 * The probe: is the service's environment visible, is a host path outside the workspace
 * visible, is the root writable, can it connect to a port listening on the host's loopback,
 * can it write its workspace.
 */
const PROBE = `
echo "service_env=$(env | grep -c -E '^(FLOTILLA_|NATS_|OPENAI_|ANTHROPIC_)')"
if [ -e "$1" ]; then echo outside=visible; else echo outside=hidden; fi
if ( : > /.flotilla-probe ) 2>/dev/null; then echo root=writable; rm -f /.flotilla-probe; else echo root=read-only; fi
if ( exec 3<>"/dev/tcp/127.0.0.1/$2" ) 2>/dev/null; then echo loopback=open; else echo loopback=closed; fi
if ( : > ./probe-file ) 2>/dev/null; then echo workspace=writable; else echo workspace=read-only; fi
`;

/** Runs the probe in a throwaway sandbox of `provider` and returns what it printed. */
export async function probeSandbox(provider: SandboxProvider, scratchDir: string): Promise<ProbeReport> {
  await mkdir(scratchDir, { recursive: true });
  const root = await mkdtemp(path.join(scratchDir, 'self-test-'));
  const workspace = path.join(root, 'workspace');
  const outside = path.join(root, 'outside');
  await mkdir(workspace);
  await mkdir(outside);
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    // an id of its own: two runners of one host testing at once must not share a cgroup (one's close removes it under the other)
    const sandbox = await provider.open({ id: `self-test-${randomBytes(4).toString('hex')}`, workspace });
    try {
      const child = await sandbox.spawn('bash', ['-c', PROBE, 'probe', outside, String(port)]);
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr.resume();
      child.stdin.end();
      const exit = await Promise.race([
        child.exited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 15_000)),
      ]);
      if (exit === undefined)
        throw new SandboxError(SandboxErrorCode.StartFailed, 'the sandbox self-test did not finish within 15 s');
      return Object.fromEntries(
        output
          .split('\n')
          .filter((line) => line.includes('='))
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
    } finally {
      await sandbox.close();
    }
  } finally {
    server.close();
    await provider.releaseWorkspace?.(workspace);
    await rm(root, { recursive: true, force: true });
  }
}

/** The isolation an isolating kind must show; throws a SandboxError naming what leaked. */
export async function runSelfTest(provider: SandboxProvider, scratchDir: string): Promise<void> {
  const { kind } = provider.describe();
  let report: ProbeReport;
  try {
    report = await probeSandbox(provider, scratchDir);
  } catch (error) {
    if (error instanceof SandboxError) throw error;
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `the ${kind} sandbox cannot start here: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const expected: Record<string, string> = {
    service_env: '0',
    outside: 'hidden',
    root: 'read-only',
    loopback: 'closed',
    workspace: 'writable',
  };
  const leaks = Object.entries(expected).filter(([key, value]) => report[key] !== value);
  if (leaks.length === 0) return;
  const seen = leaks.map(([key]) => `${key}=${report[key] ?? '(nothing printed)'}`).join(', ');
  if (report['workspace'] === undefined) {
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `the ${kind} sandbox cannot run a shell here (the self-test printed nothing): check that user namespaces are allowed (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone) and that the container's seccomp/AppArmor profile allows them`,
    );
  }
  throw new SandboxError(
    SandboxErrorCode.NotIsolated,
    `the ${kind} sandbox does not isolate here: its self-test saw ${seen}. Refusing to run the agent's commands with it.`,
  );
}
