import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { Duplex, PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';

/**
 * A stand-in for a Docker engine behind Dockerode's API, for the provider's own logic (streams,
 * the pid report, signals, exits, removal) where no engine is reachable. Execs run as local
 * processes: nothing is isolated. The real engine is tested in docker-provider-real-engine.test.ts.
 */
export class FakeEngine {
  readonly images = new Map<string, string[]>([
    ['debian:bookworm-slim', ['PATH=/usr/bin:/bin', 'IMAGE_ONLY=from-the-image']],
  ]);
  readonly containers = new Map<string, FakeContainer>();
  readonly networks = new Map<string, Dockerode.NetworkCreateOptions>();
  readonly created: Dockerode.ContainerCreateOptions[] = [];
  pingFails = false;
  pullFails = false;
  readonly modem = {
    socketPath: '/fake/docker.sock',
    followProgress(stream: NodeJS.ReadableStream, done: (error: unknown, events: unknown[]) => void): void {
      stream.resume();
      stream.on('end', () => done(null, []));
    },
  };

  /** The client, typed as Dockerode for the provider. */
  get client(): Dockerode {
    return this as unknown as Dockerode;
  }

  async ping(): Promise<string> {
    if (this.pingFails) throw Object.assign(new Error('connect ENOENT /fake/docker.sock'), { code: 'ENOENT' });
    return 'OK';
  }

  getImage(name: string): { inspect(): Promise<{ Config: { Env: string[] } }> } {
    return {
      inspect: async () => {
        const env = this.images.get(name);
        if (env === undefined) throw httpError(404, `No such image: ${name}`);
        return { Config: { Env: env } };
      },
    };
  }

  async pull(name: string): Promise<NodeJS.ReadableStream> {
    if (this.pullFails) throw httpError(404, `pull access denied for ${name}, repository does not exist`);
    this.images.set(name, ['PATH=/usr/bin:/bin']);
    const progress = new PassThrough();
    progress.end('{"status":"Downloaded"}\n');
    return progress;
  }

  getNetwork(name: string): { inspect(): Promise<Dockerode.NetworkCreateOptions> } {
    return {
      inspect: async () => {
        const network = this.networks.get(name);
        if (network === undefined) throw httpError(404, `network ${name} not found`);
        return network;
      },
    };
  }

  async createNetwork(options: Dockerode.NetworkCreateOptions): Promise<void> {
    if (this.networks.has(options.Name)) throw httpError(409, `network with name ${options.Name} already exists`);
    this.networks.set(options.Name, options);
  }

  async createContainer(options: Dockerode.ContainerCreateOptions): Promise<FakeContainer> {
    this.created.push(options);
    const name = options.name ?? randomUUID();
    if ([...this.containers.values()].some((container) => container.name === name))
      throw httpError(409, `Conflict. The container name "/${name}" is already in use`);
    if (!this.images.has(options.Image ?? '')) throw httpError(404, `No such image: ${options.Image}`);
    const source = options.HostConfig?.Mounts?.[0]?.Source ?? '';
    if (!existsSync(source))
      throw httpError(400, `invalid mount config for type "bind": bind source path does not exist: ${source}`);
    const container = new FakeContainer(this, name, options);
    this.containers.set(container.id, container);
    return container;
  }

  getContainer(idOrName: string): FakeContainer | MissingContainer {
    return this.find(idOrName) ?? new MissingContainer();
  }

  async listContainers(options: { filters?: { label?: string[] } } = {}): Promise<{ Id: string }[]> {
    const wanted = options.filters?.label ?? [];
    return [...this.containers.values()]
      .filter((container) =>
        wanted.every((pair) => `${pair.split('=')[0]}=${container.labels[pair.split('=')[0] ?? ''] ?? ''}` === pair),
      )
      .map((container) => ({ Id: container.id }));
  }

  find(idOrName: string): FakeContainer | undefined {
    return (
      this.containers.get(idOrName) ?? [...this.containers.values()].find((container) => container.name === idOrName)
    );
  }
}

class MissingContainer {
  async remove(): Promise<void> {
    throw httpError(404, 'No such container');
  }
}

export class FakeContainer {
  readonly id = randomUUID().replace(/-/g, '');
  readonly labels: Record<string, string>;
  readonly execs = new Set<FakeExec>();
  running = false;
  removed = false;
  #lifeline: Duplex | undefined;

  constructor(
    private readonly engine: FakeEngine,
    readonly name: string,
    readonly options: Dockerode.ContainerCreateOptions,
  ) {
    this.labels = { ...(options.Labels ?? {}) };
  }

  get workspace(): string {
    return this.options.HostConfig?.Mounts?.[0]?.Source ?? '/';
  }

  async attach(): Promise<Duplex> {
    const lifeline = new PassThrough();
    this.#lifeline = lifeline;
    // StdinOnce + AutoRemove: the client closing its stdin ends the container
    lifeline.once('close', () => void this.remove({ force: true }).catch(() => undefined));
    return lifeline;
  }

  async start(): Promise<void> {
    this.running = true;
  }

  async exec(options: Dockerode.ExecCreateOptions): Promise<FakeExec> {
    if (this.removed) throw httpError(404, `No such container: ${this.id}`);
    const exec = new FakeExec(this, options);
    this.execs.add(exec);
    return exec;
  }

  async remove(_options: { force?: boolean } = {}): Promise<void> {
    if (this.removed) throw httpError(404, `No such container: ${this.id}`);
    this.removed = true;
    this.running = false;
    for (const exec of this.execs) exec.killAll();
    this.#lifeline?.destroy();
    this.engine.containers.delete(this.id);
  }

  /** The environment an exec sees: the image's, the container's, the engine's HOSTNAME, then the exec's own. */
  environment(execEnv: readonly string[]): Record<string, string> {
    const lines = [
      ...(this.engine.images.get(this.options.Image ?? '') ?? []),
      `HOSTNAME=${this.id.slice(0, 12)}`,
      ...(this.options.Env ?? []),
      ...execEnv,
    ];
    return Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
  }
}

class FakeExec {
  #child: ChildProcess | undefined;
  #exitCode: number | null = null;

  constructor(
    private readonly container: FakeContainer,
    private readonly options: Dockerode.ExecCreateOptions,
  ) {}

  async start(options: Dockerode.ExecStartOptions): Promise<Duplex> {
    if (this.container.removed) throw httpError(404, 'No such container');
    const [command, ...args] = this.options.Cmd ?? [];
    const cwd = (this.options.WorkingDir ?? '/workspace').replace(/^\/workspace/, this.container.workspace);
    const child = spawn(command!, args, {
      cwd,
      env: this.container.environment(this.options.Env ?? []),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.#child = child;
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    const connection = new ExecConnection(child);
    child.once('exit', (code, signal) => {
      this.#exitCode = code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
    });
    if (options.Detach) connection.resume();
    return connection;
  }

  async inspect(): Promise<{ Running: boolean; ExitCode: number | null; Pid: number }> {
    if (this.container.removed) throw httpError(404, 'No such exec instance');
    const child = this.#child;
    return {
      Running: child !== undefined && child.exitCode === null && child.signalCode === null,
      ExitCode: this.#exitCode,
      Pid: child?.pid ?? 0,
    };
  }

  killAll(): void {
    const child = this.#child;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
    // the container's pid namespace ends: everything in it dies
    for (const target of [-child.pid, child.pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}

/** The hijacked connection: writes go to stdin, reads are the engine's multiplexed frames. */
class ExecConnection extends Duplex {
  #open = 2;

  constructor(private readonly child: ChildProcess) {
    super();
    const frame = (stream: 1 | 2) => (chunk: Buffer) => {
      const header = Buffer.alloc(8);
      header[0] = stream;
      header.writeUInt32BE(chunk.length, 4);
      this.push(Buffer.concat([header, chunk]));
    };
    child.stdout?.on('data', frame(1));
    child.stderr?.on('data', frame(2));
    const closed = (): void => {
      this.#open -= 1;
      if (this.#open === 0) this.push(null);
    };
    child.stdout?.on('error', () => undefined);
    child.stderr?.on('error', () => undefined);
    child.stdout?.once('close', closed);
    child.stderr?.once('close', closed);
    // the engine waits up to 2 s for the streams of an exec that exited (what it started may
    // hold them), then closes them: shortened here
    child.once('exit', () => setTimeout(() => this.#endOutput(), 300).unref());
  }

  #endOutput(): void {
    if (this.#open <= 0) return;
    this.#open = 0;
    this.push(null);
  }

  override _read(): void {
    // pushed as the process writes
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.child.stdin?.writable) this.child.stdin.write(chunk, () => callback());
    else callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.child.stdin?.end();
    callback();
  }
}

function httpError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) ${message}`), { statusCode });
}
