import { SANDBOX_HOME, SANDBOX_PRIVATE, SANDBOX_WORKSPACE } from '../environment.js';
import type { SandboxLimits } from '../settings.js';
import { SANDBOX_USER } from './generated-etc.js';

export type BwrapInvocation = {
  readonly system: readonly string[];
  /** The workspace on the host. */
  readonly workspace: string;
  /** The service's directory for the conversation, seen read-only. */
  readonly privateDir: string;
  readonly cwd: string;
  readonly limits: SandboxLimits;
  /**
   * The child's fds of `--info-fd` and `--block-fd`: the caller, told the sandbox's first process,
   * puts it in its cgroup and gives it its network before the command starts.
   */
  readonly gate?: { readonly infoFd: number; readonly blockFd: number };
  /** The process is started inside its sandbox's network namespace (SharedNetwork): it makes none of its own. */
  readonly sharesNetwork?: boolean;
};

/**
 * Limits as rlimits, applied inside the sandbox's own user namespace (by prlimit, which then
 * becomes the command), so the process count is the sandbox's own and not the host user's.
 */
export function rlimitArguments(limits: SandboxLimits): string[] {
  const pair = (value: number): string => `${value}:${value}`;
  return [
    '/usr/bin/prlimit',
    `--nproc=${pair(limits.processes)}`,
    `--data=${pair(limits.memoryBytes)}`,
    `--cpu=${pair(limits.cpuSeconds)}`,
    `--fsize=${pair(limits.fileBytes)}`,
    '--core=0:0',
    '--',
  ];
}

/**
 * One sandboxed process: every namespace of its own (user, pid, net, ipc, uts, cgroup; the net
 * one its sandbox's where the processes of a sandbox share it), the
 * system read-only, a private memory-backed /tmp and HOME, the workspace read-write at
 * /workspace and nothing else of the host; it dies with the service that started it.
 */
export function bwrapArguments(invocation: BwrapInvocation, command: string, args: readonly string[]): string[] {
  const out = [
    '--unshare-user',
    '--unshare-pid',
    ...(invocation.sharesNetwork ? [] : ['--unshare-net']),
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--disable-userns',
    '--die-with-parent',
    '--uid',
    String(SANDBOX_USER.uid),
    '--gid',
    String(SANDBOX_USER.gid),
    '--hostname',
    'sandbox',
    // the private /tmp and HOME first: the system binds after them (the operator's read-only paths
    // among them) are seen even where they lie under /tmp, instead of hidden by the tmpfs
    '--size',
    String(invocation.limits.tmpBytes),
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
    '--size',
    String(invocation.limits.tmpBytes),
    '--perms',
    '0700',
    '--tmpfs',
    SANDBOX_HOME,
    ...invocation.system,
  ];
  out.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--bind',
    invocation.workspace,
    SANDBOX_WORKSPACE,
    '--ro-bind',
    invocation.privateDir,
    SANDBOX_PRIVATE,
    // the root bwrap builds is a tmpfs the sandbox user could write: make it read-only
    '--remount-ro',
    '/',
    '--chdir',
    invocation.cwd,
  );
  if (invocation.gate)
    out.push('--info-fd', String(invocation.gate.infoFd), '--block-fd', String(invocation.gate.blockFd));
  out.push('--', ...rlimitArguments(invocation.limits), command, ...args);
  return out;
}
