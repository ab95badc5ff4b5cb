import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, readlink } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import { spawned } from '../sandbox-process.js';

export type Credentials = { readonly uid: number; readonly gid: number } | undefined;

/** Reads the first JSON document bwrap writes to its --info-fd: the sandboxed child's host pid. */
export function readChildPid(info: Readable, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(
      () => finish(new Error(`bwrap did not report its child within ${timeoutMs} ms`)),
      timeoutMs,
    );
    let settled = false;
    const finish = (error?: Error, pid?: number): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(pid!);
    };
    // read to the end: bwrap writes the rest of its document, and closing early would kill it (SIGPIPE)
    info.on('data', (chunk: Buffer) => {
      if (settled) return;
      text += chunk.toString('utf8');
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match) finish(undefined, Number(match[1]));
    });
    info.once('end', () => finish(new Error('bwrap closed its info fd before reporting its child')));
  });
}

/**
 * Gives the network namespace of `pid` a user-mode stack to the outside world (slirp4netns):
 * a tap device with the usual 10.0.2.0/24 addresses, DNS at 10.0.2.3, and the host's loopback
 * NOT reachable (`--disable-host-loopback`). It exits when its exit fd closes: when the
 * sandbox's process is done, or when this service dies.
 */
export async function attachEgress(pid: number, credentials: Credentials, timeoutMs: number): Promise<ChildProcess> {
  await namespacesReady(pid, timeoutMs);
  // As root (credentials given: the sandbox runs as another user), slirp4netns joins the
  // namespace directly and confines itself (--enable-sandbox drops its capabilities, seccomp
  // limits its system calls); otherwise it joins the sandbox's user namespace, which is ours.
  // The namespace by path: joining by pid (a pidfd) is refused once bwrap has nested the command's namespaces.
  const join = credentials ? ['--enable-sandbox', '--enable-seccomp'] : [`--userns-path=/proc/${pid}/ns/user`];
  const child = spawn(
    'slirp4netns',
    [
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      '--ready-fd=3',
      '--exit-fd=4',
      ...join,
      '--netns-type=path',
      `/proc/${pid}/ns/net`,
      'tap0',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    },
  );
  for (const stream of child.stdio) stream?.on('error', () => undefined);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
  try {
    await spawned(child);
  } catch (error) {
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `slirp4netns could not start (${(error as Error).message}): install it (Debian: apt-get install slirp4netns) or use the network mode none`,
      { cause: error },
    );
  }
  const ready = child.stdio[3] as Readable;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(failure(`it was not ready within ${timeoutMs} ms`)), timeoutMs);
    const failure = (why: string): SandboxError =>
      new SandboxError(
        SandboxErrorCode.StartFailed,
        `slirp4netns could not give the sandbox its network: ${why}${stderr ? `: ${stderr.trim()}` : ''}`,
      );
    ready.once('data', () => {
      clearTimeout(timer);
      resolve();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(failure(`it exited with ${code}`));
    });
  });
  ready.destroy();
  return child;
}

/**
 * bwrap reports its child before the child's user namespace has its uid map; joining the
 * child's network namespace before then is refused (EPERM). Wait for the map, and never attach
 * to a process that shares this service's own network namespace.
 */
export async function namespacesReady(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const own = await readlink('/proc/self/ns/net');
  for (;;) {
    const map = await readFile(`/proc/${pid}/uid_map`, 'utf8').catch(() => '');
    if (map.trim() !== '') {
      if ((await readlink(`/proc/${pid}/ns/net`)) === own)
        throw new SandboxError(
          SandboxErrorCode.StartFailed,
          'the sandbox shares the host network namespace: refusing to attach a network to it',
        );
      return;
    }
    if (Date.now() > deadline)
      throw new SandboxError(
        SandboxErrorCode.StartFailed,
        `the sandbox's user namespace was not ready within ${timeoutMs} ms`,
      );
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Ends a slirp4netns started by attachEgress (closing its exit fd), killing it if it lingers. */
export function detachEgress(child: ChildProcess): void {
  (child.stdio[4] as Writable | null)?.destroy();
  setTimeout(() => child.kill('SIGKILL'), 1_000).unref();
}
