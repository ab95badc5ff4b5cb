import type { ProcessExit } from '../sandbox.js';

/**
 * What a spawned process prints on stderr before anything else: its pid inside the container,
 * then a newline. The record separator (0x1e) keeps it apart from any output a command could make
 * (the command has not started yet when it is written).
 */
export const PID_MARKER = '\x1eflotilla-pid ';

/**
 * Starts a command inside the container so that it can be signalled with everything it starts.
 *
 * `exec.inspect().Pid` is the host's pid of the exec'd process: useless from inside the
 * container's pid namespace, where the signal must be sent. So the command is started through
 * this POSIX sh wrapper, which (1) unsets the variables the image and the engine add (HOSTNAME,
 * the image's ENV lines) so that the environment is exactly the one built from scratch,
 * (2) prints its own pid (`$$`) on stderr as the first line, (3) makes that pid the leader of a
 * new session and process group (`setsid` without a fork: it is not a group leader yet, so
 * setsid(2) succeeds in place) unless it leads its group already, and (4) execs the command,
 * which keeps the pid. Signals then go to the group `-pid` from a second exec; everything the
 * command starts stays in that group unless it makes a session of its own.
 *
 * Arguments: `$0` a name, `$1` the variables to unset (space separated, validated names), then
 * the command and its arguments.
 */
export const SPAWN_WRAPPER = [
  'for name in $1; do unset "$name"; done',
  'shift',
  'group=0',
  'read -r _ _ _ _ group _ 2>/dev/null < /proc/$$/stat',
  `printf '\\036flotilla-pid %s\\n' "$$" >&2`,
  'if [ "$group" != "$$" ] && command -v setsid >/dev/null 2>&1; then exec setsid "$@"; fi',
  'exec "$@"',
].join('\n');

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The exec's command line that runs `command args` through the wrapper. */
export function spawnCommand(unset: readonly string[], command: string, args: readonly string[]): string[] {
  const names = unset.filter((name) => VARIABLE_NAME.test(name));
  return ['/bin/sh', '-c', SPAWN_WRAPPER, 'flotilla-spawn', names.join(' '), command, ...args];
}

/**
 * Linux signal numbers (the generic ABI of x86, arm, arm64 and riscv) by name. Exit codes of
 * signalled processes come from the container's kernel as 128 + this number, whatever the host
 * of this service is; aliases map to the name `kill` knows.
 */
const LINUX_SIGNALS: Readonly<Record<string, { readonly name: string; readonly number: number }>> = Object.fromEntries(
  (
    [
      ['SIGHUP', 1],
      ['SIGINT', 2],
      ['SIGQUIT', 3],
      ['SIGILL', 4],
      ['SIGTRAP', 5],
      ['SIGABRT', 6],
      ['SIGIOT', 6],
      ['SIGBUS', 7],
      ['SIGFPE', 8],
      ['SIGKILL', 9],
      ['SIGUSR1', 10],
      ['SIGSEGV', 11],
      ['SIGUSR2', 12],
      ['SIGPIPE', 13],
      ['SIGALRM', 14],
      ['SIGTERM', 15],
      ['SIGSTKFLT', 16],
      ['SIGCHLD', 17],
      ['SIGCONT', 18],
      ['SIGSTOP', 19],
      ['SIGTSTP', 20],
      ['SIGTTIN', 21],
      ['SIGTTOU', 22],
      ['SIGURG', 23],
      ['SIGXCPU', 24],
      ['SIGXFSZ', 25],
      ['SIGVTALRM', 26],
      ['SIGPROF', 27],
      ['SIGWINCH', 28],
      ['SIGIO', 29],
      ['SIGPOLL', 29],
      ['SIGPWR', 30],
      ['SIGSYS', 31],
    ] as const
  ).map(([signal, number]) => [signal, { name: canonical(signal), number }]),
);

function canonical(signal: string): string {
  if (signal === 'SIGIOT') return 'ABRT';
  if (signal === 'SIGPOLL') return 'IO';
  return signal.slice(3);
}

/** The shell's name of a signal (`TERM`), or undefined for one Linux does not have. */
export function linuxSignalName(signal: NodeJS.Signals): string | undefined {
  return LINUX_SIGNALS[signal]?.name;
}

/**
 * The script of the exec that signals a spawned process: its group first, the process alone if
 * it leads no group (no setsid in the image). Both values are validated before they reach it.
 */
export function signalScript(signalName: string, pid: number, options: { readonly groupOnly?: boolean } = {}): string {
  if (!/^[A-Z0-9]+$/.test(signalName) || !Number.isInteger(pid) || pid <= 1)
    throw new Error(`refusing to signal ${signalName} ${pid}`);
  const group = `kill -${signalName} -${pid} 2>/dev/null`;
  return options.groupOnly ? `${group}; exit 0` : `${group} || kill -${signalName} ${pid} 2>/dev/null; exit 0`;
}

/**
 * A process's exit as the engine reports it (a code; 128 + n for a process killed by signal n)
 * in the form of child_process: a signal this service sent is reported as that signal.
 */
export function processExit(exitCode: number | null, sent: ReadonlySet<NodeJS.Signals>): ProcessExit {
  if (exitCode !== null && exitCode > 128) {
    for (const signal of sent) if (LINUX_SIGNALS[signal]?.number === exitCode - 128) return { code: null, signal };
  }
  return { code: exitCode, signal: null };
}
