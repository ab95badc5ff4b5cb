import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { sandboxEnvironment } from '../environment.js';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import type { Sandbox, SandboxProcess, SandboxProvider, SandboxSpec, SpawnOptions } from '../sandbox.js';
import { childSandboxProcess, spawned } from '../sandbox-process.js';
import type { SandboxSettings } from '../settings.js';
import { FifoFactory } from '../fifo-factory.js';
import { defaultPrivateDir } from '../inside-path.js';

/**
 * No isolation: processes run as the service, on the host, in the workspace directory. Only the
 * environment is built from scratch. For trusted single-user setups, by explicit configuration.
 */
export function createNoneProvider(settings: SandboxSettings): SandboxProvider {
  return {
    describe: () => ({
      kind: 'none',
      network: settings.network,
      isolated: false,
      limits: settings.limits,
      enforcement: 'none',
      networkPerSandbox: true,
      disk: { kind: 'checked', reason: 'the none kind (no isolation)' },
    }),
    open: (spec) => Promise.resolve(openHostSandbox(spec)),
    async selfTest() {
      const child = spawn('bash', ['-c', 'true'], { stdio: 'ignore' });
      try {
        await spawned(child);
      } catch (error) {
        throw new SandboxError(
          SandboxErrorCode.Unavailable,
          `bash is required to run commands: ${(error as Error).message}`,
        );
      }
    },
  };
}

/** Unsandboxed processes are for tests and trusted setups: FIFOs made when asked for, no spares. */
const HOST_FIFOS = new FifoFactory(undefined);

/** A `none` sandbox, at once: the conversation's processes on the host, in its workspace. */
export function openHostSandbox(spec: SandboxSpec): Sandbox {
  return new HostProcesses(spec);
}

class HostProcesses implements Sandbox {
  readonly owner = undefined;
  readonly #processes = new Set<SandboxProcess>();
  #closed = false;

  constructor(private readonly spec: SandboxSpec) {}

  get id(): string {
    return this.spec.id;
  }

  get hostWorkspace(): string {
    return this.spec.workspace;
  }

  get workspacePath(): string {
    return this.spec.workspace;
  }

  get privateDir(): string {
    return (
      this.spec.privateDir ??
      defaultPrivateDir(path.join(os.tmpdir(), 'flotilla-private'), `${this.spec.workspace}\0${this.spec.id}`)
    );
  }

  toInside(hostPath: string): string {
    return hostPath;
  }

  makeFifo(hostPath: string): Promise<void> {
    return HOST_FIFOS.make(hostPath);
  }

  /** Set at the first process started in it (a terminal's shell outlives its command). */
  holding = false;

  async spawn(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.#closed) throw new SandboxError(SandboxErrorCode.Closed, `the sandbox of ${this.spec.id} is closed`);
    this.holding = true;
    const child = spawn(command, args, {
      cwd: options.cwd ?? this.spec.workspace,
      env: sandboxEnvironment(this.spec.workspace, this.spec.env, options.env),
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    await spawned(child);
    const member = childSandboxProcess(child, () => this.#processes.delete(member));
    this.#processes.add(member);
    return member;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#processes];
    for (const member of running) member.signal('SIGKILL');
    await Promise.race([
      Promise.all(running.map((member) => member.exited)),
      new Promise((resolve) => setTimeout(resolve, 2_000)),
    ]);
  }
}
