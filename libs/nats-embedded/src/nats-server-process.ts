import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { findNatsServerBinary } from './nats-binary.js';

export type NatsServerProcessOptions = {
  /** Path of the nats-server binary; defaults to the one on PATH. */
  readonly binary?: string;
  readonly port?: number;
  /** JetStream store directory; a fresh temp dir (removed on dispose) when omitted. */
  readonly storeDir?: string;
  readonly extraArgs?: readonly string[];
  /** Enable JetStream (default true). */
  readonly jetstream?: boolean;
  readonly startTimeoutMs?: number;
};

/**
 * A nats-server child process with JetStream on a free loopback port and its own store
 * dir. It can be killed (SIGKILL, like a crash) and restarted on the same port and store,
 * and is disposed with `await using`.
 */
export class NatsServerProcess implements AsyncDisposable {
  readonly url: string;
  #child: ChildProcess | undefined;
  #ownsStore: boolean;

  private constructor(
    readonly binary: string,
    readonly port: number,
    readonly storeDir: string,
    ownsStore: boolean,
    private readonly extraArgs: readonly string[],
    private readonly startTimeoutMs: number,
  ) {
    this.url = `nats://127.0.0.1:${port}`;
    this.#ownsStore = ownsStore;
  }

  static async start(options: NatsServerProcessOptions = {}): Promise<NatsServerProcess> {
    const binary = options.binary ?? findNatsServerBinary();
    if (!binary) throw new Error('nats-server not found on PATH: install it (e.g. apt-get install -y nats-server) or set NATS_URL');
    const port = options.port ?? (await freePort());
    const storeDir = options.storeDir ?? (await mkdtemp(join(tmpdir(), 'flotilla-nats-')));
    const server = new NatsServerProcess(binary, port, storeDir, options.storeDir === undefined, [...(options.jetstream === false ? [] : ['-js']), ...(options.extraArgs ?? [])], options.startTimeoutMs ?? 15_000);
    await server.#spawn();
    return server;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Kills the server (SIGKILL by default: no graceful shutdown, like a crash) and waits for it to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.#child;
    if (!child || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  /** Starts the server again on the same port and store directory. */
  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    await this.#spawn();
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.kill('SIGKILL');
    if (this.#ownsStore) await rm(this.storeDir, { recursive: true, force: true });
  }

  async #spawn(): Promise<void> {
    const args = ['-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir, ...this.extraArgs];
    const child = spawn(this.binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    // A nats-server must not outlive the process that started it (a crashed test worker, a killed launcher).
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    child.once('exit', () => process.removeListener('exit', reap));
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => fail(new Error(`nats-server did not become ready in ${this.startTimeoutMs} ms:\n${output}`)), this.startTimeoutMs);
      const fail = (error: Error): void => {
        clearTimeout(timer);
        child.stderr?.removeAllListeners('data');
        reject(error);
      };
      child.once('error', fail);
      child.once('exit', (code, signal) => fail(new Error(`nats-server exited (${code ?? signal}) before ready:\n${output}`)));
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Server is ready')) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          child.stderr?.removeAllListeners('data');
          child.stderr?.resume();
          resolve();
        }
      });
    });
  }
}
