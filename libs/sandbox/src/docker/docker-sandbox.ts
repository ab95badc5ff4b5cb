import type { Duplex } from 'node:stream';
import type Dockerode from 'dockerode';
import { sandboxEnvironment, SANDBOX_HOME, SANDBOX_WORKSPACE } from '../environment.js';
import type { FifoFactory } from '../fifo-factory.js';
import { isolatedInsidePath } from '../inside-path.js';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import type { Sandbox, SandboxProcess, SandboxSpec, SpawnOptions } from '../sandbox.js';
import { environmentList } from './container-plan.js';
import { messageOf, removeContainer, statusOf, type DockerSandboxLogger } from './docker-engine.js';
import { startExec } from './docker-process.js';
import { spawnCommand } from './spawn-script.js';

export type DockerSandboxParts = {
  readonly docker: Dockerode;
  readonly container: Dockerode.Container;
  /** The attached stdin that keeps the container alive; closing it stops the container. */
  readonly lifeline: Duplex;
  /** `uid:gid` the processes run as. */
  readonly user: string;
  /** That user when it is not the service's own (the service runs as root). */
  readonly owner: { readonly uid: number; readonly gid: number } | undefined;
  /** Variables the image or the engine add, unset in every process unless set on purpose. */
  readonly foreignVariables: readonly string[];
  readonly logger: DockerSandboxLogger;
  /** Makes the terminal's FIFOs in the private directory (on the host: the engine shares its kernel). */
  readonly fifos: FifoFactory;
};

/** One conversation's container; its processes are execs in it. */
export class DockerSandbox implements Sandbox {
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly #processes = new Set<SandboxProcess>();
  #closed = false;

  constructor(
    private readonly spec: SandboxSpec,
    private readonly parts: DockerSandboxParts,
  ) {
    // the engine closes the lifeline when the container stops (it was removed, or its init died)
    parts.lifeline.on('error', () => undefined);
    parts.lifeline.once('close', () => {
      if (!this.#closed) parts.logger.warn({ sandbox: spec.id }, 'the sandbox container stopped on its own');
      this.#closed = true;
    });
  }

  get id(): string {
    return this.spec.id;
  }

  get hostWorkspace(): string {
    return this.spec.workspace;
  }

  /** The container's id on the engine. */
  get owner(): { readonly uid: number; readonly gid: number } | undefined {
    return this.parts.owner;
  }

  get containerId(): string {
    return this.parts.container.id;
  }

  get privateDir(): string {
    return this.spec.privateDir!;
  }

  makeFifo(hostPath: string): Promise<void> {
    return this.parts.fifos.make(hostPath);
  }

  toInside(hostPath: string): string {
    return isolatedInsidePath(hostPath, this.spec.workspace, this.privateDir);
  }

  /** Its container, from the start. */
  readonly holding = true;

  async spawn(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.#closed) throw new SandboxError(SandboxErrorCode.Closed, `the sandbox of ${this.spec.id} is closed`);
    const environment = sandboxEnvironment(SANDBOX_HOME, this.spec.env, options.env);
    const unset = this.parts.foreignVariables.filter((name) => !(name in environment));
    let child: SandboxProcess;
    try {
      child = await startExec(
        this.parts.container,
        {
          Cmd: spawnCommand(unset, command, args),
          Env: environmentList(environment),
          WorkingDir: options.cwd ?? SANDBOX_WORKSPACE,
          User: this.parts.user,
        },
        { onExit: () => this.#processes.delete(child), containerGone: () => this.#closed },
      );
    } catch (error) {
      const status = statusOf(error);
      if (status === 404 || status === 409) {
        this.#closed = true;
        throw new SandboxError(
          SandboxErrorCode.Closed,
          `the sandbox container of ${this.spec.id} is gone (${messageOf(error)}): open the sandbox again`,
          { cause: error, isRetryable: true },
        );
      }
      throw new SandboxError(
        SandboxErrorCode.StartFailed,
        `could not start ${command} in the sandbox of ${this.spec.id}: ${messageOf(error)}`,
        { cause: error, isRetryable: true },
      );
    }
    this.#processes.add(child);
    return child;
  }

  /** Removes the container, which kills every process in it; the workspace stays. */
  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#processes];
    try {
      await removeContainer(this.parts.docker, this.parts.container.id);
    } finally {
      this.parts.lifeline.destroy();
    }
    await Promise.race([
      Promise.all(running.map((member) => member.exited)),
      new Promise((resolve) => setTimeout(resolve, 5_000)),
    ]);
  }
}
