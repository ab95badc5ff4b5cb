import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { ProcessExit, SandboxProcess } from './sandbox.js';

/**
 * A spawned child (started `detached`, so it leads its own process group) as a SandboxProcess.
 * `signal` reaches the whole group: the child and everything it started.
 */
export function childSandboxProcess(child: ChildProcess, onExit?: (exit: ProcessExit) => void): SandboxProcess {
  let exited = false;
  const exit = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true;
      onExit?.({ code, signal });
      resolve({ code, signal });
    });
  });
  child.stdin?.on('error', () => undefined);
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
