import type { ChildProcess } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { open, type FileHandle } from 'node:fs/promises';
import { attachEgress, detachEgress, namespacesReady, type Credentials } from './slirp-network.js';

/** CAP_SYS_ADMIN's bit in /proc/<pid>/status's capability masks (linux/capability.h). */
const CAP_SYS_ADMIN = 21;

/**
 * Whether this service may put later processes of a sandbox into the network namespace of its
 * first (setns needs CAP_SYS_ADMIN over the namespace, and util-linux's nsenter): root on a host
 * has it, an unprivileged service or a container without that capability does not.
 */
export function mayShareNetwork(credentials: Credentials): boolean {
  if (!credentials || !onPath('nsenter')) return false;
  try {
    const effective = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    return effective !== undefined && ((BigInt(`0x${effective}`) >> BigInt(CAP_SYS_ADMIN)) & 1n) === 1n;
  } catch {
    return false;
  }
}

/**
 * The network namespace every process of one sandbox shares: made by its first process's bwrap,
 * held open by this service (a handle on the namespace, so it outlives that process and can never
 * name another's), entered by each later process through nsenter before its bwrap starts. A server
 * one command starts is thus reachable from the next (the browser opening what the agent serves),
 * and egress needs one slirp4netns per sandbox, not per process.
 */
export class SharedNetwork {
  private constructor(
    readonly handle: FileHandle,
    readonly egress: ChildProcess | undefined,
  ) {}

  /** Takes the namespace of `pid` (a sandbox's first process, held at bwrap's gate) and gives it egress when asked. */
  static async take(pid: number, egress: boolean, credentials: Credentials, timeoutMs: number): Promise<SharedNetwork> {
    await namespacesReady(pid, timeoutMs);
    const handle = await open(`/proc/${pid}/ns/net`, 'r');
    try {
      return new SharedNetwork(handle, egress ? await attachEgress(pid, credentials, timeoutMs) : undefined);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  #entering = 0;
  #closing = false;

  /**
   * nsenter's command line that enters the namespace as the sandbox user, before the command that
   * follows `--`, and its release, called once the process it started has exited: the handle stays
   * open while a process may still be opening it by its /proc path (a closed handle's fd number could
   * name another sandbox's namespace by then). Undefined once the sandbox is closing.
   */
  enter(credentials: NonNullable<Credentials>): { readonly args: string[]; readonly release: () => void } | undefined {
    if (this.#closing) return undefined;
    this.#entering += 1;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#entering -= 1;
      if (this.#closing && this.#entering === 0) void this.handle.close().catch(() => undefined);
    };
    const args = [
      `--net=/proc/${process.pid}/fd/${this.handle.fd}`,
      '--setuid',
      String(credentials.uid),
      '--setgid',
      String(credentials.gid),
      '--',
    ];
    return { args, release };
  }

  /** Ends egress at once, and the handle when the last process that entered has exited. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    if (this.egress) detachEgress(this.egress);
    if (this.#entering === 0) await this.handle.close().catch(() => undefined);
  }
}

function onPath(command: string): boolean {
  return (process.env['PATH'] ?? '/usr/bin:/bin').split(path.delimiter).some((directory) => {
    try {
      accessSync(path.join(directory, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
