import { PassThrough, type Duplex, type Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import type { ProcessExit, SandboxProcess } from '../sandbox.js';
import { statusOf } from './docker-engine.js';
import { demultiplex, SpawnReportFilter, stdinOf } from './docker-stream.js';
import { linuxSignalName, processExit, signalScript } from './spawn-script.js';

export type ExecPlan = {
  readonly Cmd: string[];
  readonly Env: string[];
  readonly WorkingDir: string;
  readonly User: string;
};

export type ProcessHooks = {
  /** Called once the process has exited (and what it started has been killed). */
  readonly onExit?: (exit: ProcessExit) => void;
  /** True once the container is being removed: nothing is left to signal. */
  readonly containerGone?: () => boolean;
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs one exec in `container` (its command started through the spawn wrapper) and exposes it
 * as a SandboxProcess: stdin, stdout and stderr over the hijacked connection, `exited` once the
 * engine closes that connection (the process is gone and its output read to the end), with the
 * code from `exec.inspect()`.
 */
export async function startExec(
  container: Dockerode.Container,
  plan: ExecPlan,
  hooks: ProcessHooks = {},
): Promise<SandboxProcess> {
  const exec = await container.exec({ ...plan, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: false });
  const connection: Duplex = await exec.start({ hijack: true, stdin: true });
  const stdout = new PassThrough();
  const stderr = new SpawnReportFilter();
  demultiplex(connection, stdout, stderr);
  const sent = new Set<NodeJS.Signals>();
  let hasExited = false;

  const signalGroup = async (name: string, pid: number, groupOnly: boolean, wait: boolean): Promise<void> => {
    if (hooks.containerGone?.()) return;
    const kill = await container.exec({
      Cmd: ['/bin/sh', '-c', signalScript(name, pid, { groupOnly })],
      User: plan.User,
      AttachStdout: wait,
      AttachStderr: wait,
    });
    if (!wait) {
      // the answer has no body, but is read to its end so that the connection is let go
      ((await kill.start({ Detach: true })) as Readable | undefined)?.resume?.();
      return;
    }
    const output = (await kill.start({ hijack: true, stdin: false })) as Readable;
    await new Promise<void>((resolve) => {
      output.once('close', resolve);
      output.once('end', resolve);
      output.once('error', () => resolve());
      output.resume();
    });
  };

  const exited = (async (): Promise<ProcessExit> => {
    await new Promise<void>((resolve) => {
      if (connection.destroyed) resolve();
      connection.once('close', () => resolve());
      connection.once('end', () => {
        if (!connection.writableEnded) connection.end();
        resolve();
      });
    });
    const exit = await exitOf(exec, sent);
    // what it started goes with it, as it would with a pid namespace of its own
    // the pid came with its first line, which is in by now; a loaded machine may parse it late
    const pid = await Promise.race([stderr.pid, sleep(2_000).then(() => undefined)]);
    if (pid !== undefined)
      await Promise.race([signalGroup('KILL', pid, true, true).catch(() => undefined), sleep(2_000)]);
    hasExited = true;
    hooks.onExit?.(exit);
    return exit;
  })();

  return {
    stdin: stdinOf(connection),
    stdout,
    stderr,
    // the engine's host pid of the exec is in another pid namespace (and maybe on another
    // host): no process of this host that this service could use
    pid: undefined,
    exited,
    get hasExited() {
      return hasExited;
    },
    signal(signal: NodeJS.Signals) {
      const name = linuxSignalName(signal);
      if (hasExited || name === undefined) return;
      sent.add(signal);
      // the pid arrives with the first line on stderr; a signal sent before waits for it
      void stderr.pid
        .then((pid) => (pid === undefined || hasExited ? undefined : signalGroup(name, pid, false, false)))
        .catch(() => undefined);
    },
  };
}

/** The exec's exit from the engine; a process whose container was removed was killed with it. */
async function exitOf(exec: Dockerode.Exec, sent: ReadonlySet<NodeJS.Signals>): Promise<ProcessExit> {
  for (let attempt = 0; attempt < 40; attempt += 1) {
    try {
      const info = await exec.inspect();
      if (!info.Running) return processExit(info.ExitCode, sent);
    } catch (error) {
      if (statusOf(error) === 404) return { code: null, signal: 'SIGKILL' };
      return { code: null, signal: null };
    }
    await sleep(50);
  }
  return { code: null, signal: null };
}
