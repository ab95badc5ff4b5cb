import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * One watcher process per service that kills the process groups of every sandboxed process
 * still running when the service dies, even by SIGKILL: it reads `+ <group>` and `- <group>`
 * lines on a pipe only this process holds, and at end of file (the service is gone) kills the
 * groups it holds. bwrap's --die-with-parent does the same but leaves a window while bwrap
 * starts (a parent that dies before bwrap asked for the signal is never noticed); this closes it.
 */
const WATCHER = `
declare -A groups
while read -r op group; do
  case "$op" in
    +) groups[$group]=1 ;;
    -) unset "groups[$group]" ;;
  esac
done
for group in "\${!groups[@]}"; do kill -9 -- "-$group" 2>/dev/null; done
`;

let watcher: ChildProcess | undefined;

function ensureWatcher(): ChildProcess {
  if (watcher && watcher.exitCode === null && watcher.signalCode === null) return watcher;
  const started = spawn('bash', ['-c', WATCHER], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  started.on('error', () => undefined);
  started.stdin?.on('error', () => undefined);
  // neither the watcher nor its pipe keeps this process alive
  started.unref();
  (started.stdin as unknown as Socket | null)?.unref?.();
  watcher = started;
  return started;
}

/** Kill `group` (a process group id) if this service dies while it runs. */
export function reapOnDeath(group: number): void {
  ensureWatcher().stdin?.write(`+ ${group}\n`);
}

/** `group` is gone: its id may be reused, never kill it. */
export function forgetGroup(group: number): void {
  if (watcher && watcher.exitCode === null) watcher.stdin?.write(`- ${group}\n`);
}
