import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { forgetGroup, reapOnDeath } from './group-reaper.js';
import type { ProcessExit, SandboxProcess } from './sandbox.js';

/**
 * A spawned child (started `detached`, so it leads its own process group) as a SandboxProcess.
 * `signal` reaches the whole group: the child and everything it started.
 */
export function childSandboxProcess(child: ChildProcess, onExit?: (exit: ProcessExit) => void): SandboxProcess {
  let exited = false;
  // its group dies with this service, whenever that happens (see reapOnDeath)
  if (child.pid !== undefined) reapOnDeath(child.pid);
  const exit = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      if (child.pid !== undefined) {
        // what the process left running in its group goes with it; then the id is free for reuse
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // nothing left
        }
        forgetGroup(child.pid);
      }
      onExit?.({ code, signal });
      resolve({ code, signal });
    });
  });
  // a pipe whose other end went away (ECONNRESET, EPIPE) ends like a closed one, never as an uncaught error
  for (const stream of child.stdio) stream?.on('error', () => undefined);
  return {
    stdin: child.stdin as Writable,
    stdout: child.stdout as Readable,
    stderr: child.stderr as Readable,
    pid: child.pid,
    exited: exit,
    get hasExited() {
      return exited;
    },
    signal(signal) {
      if (exited || child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // the group is already gone
      }
    },
  };
}

/** Resolves once the child has spawned; rejects with the spawn error (e.g. a missing binary). */
export function spawned(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
}
