import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { freePort } from './free-port.js';
import { findNatsServerBinary, missingNatsServerHint } from './nats-binary.js';
import { NatsEmbeddedError, NatsEmbeddedErrorCode } from './nats-embedded-error.js';
import { forEachLine } from './stderr-lines.js';

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
  /**
   * Text of a nats-server configuration file (an `authorization {}` block, `tls {}`, `cluster {}`, …).
   * It is written owner-only (0600) to `<storeDir>.conf`, beside the store directory, and passed with
   * `-c`; the command-line flags (-a, -p, -sd, -js) still override what it says about those.
   */
  readonly config?: string;
  /**
   * Called with each line nats-server prints on stderr (its log), from start-up on and across restarts.
   * Without it the log is read and dropped.
   */
  readonly onLog?: (line: string) => void;
};

type Settings = {
  readonly binary: string;
  readonly port: number;
  readonly storeDir: string;
  readonly ownsStore: boolean;
  readonly configFile: string | undefined;
  readonly args: readonly string[];
  readonly startTimeoutMs: number;
  readonly onLog: ((line: string) => void) | undefined;
};

/**
 * A nats-server child process with JetStream on a free loopback port and its own store
 * dir. It can be killed (SIGKILL, like a crash) and restarted on the same port, store and
 * configuration file, and is disposed with `await using`.
 */
export class NatsServerProcess implements AsyncDisposable {
  readonly binary: string;
  readonly port: number;
  readonly storeDir: string;
  readonly url: string;
  /** The configuration file passed with `-c`, when the `config` option was given. */
  readonly configFile: string | undefined;
  readonly #settings: Settings;
  #child: ChildProcess | undefined;

  private constructor(settings: Settings) {
    this.#settings = settings;
    this.binary = settings.binary;
    this.port = settings.port;
    this.storeDir = settings.storeDir;
    this.configFile = settings.configFile;
    this.url = `nats://127.0.0.1:${settings.port}`;
  }

  static async start(options: NatsServerProcessOptions = {}): Promise<NatsServerProcess> {
    const binary = options.binary ?? findNatsServerBinary();
    if (!binary) throw new NatsEmbeddedError(NatsEmbeddedErrorCode.binaryNotFound, missingNatsServerHint());
    const port = options.port ?? (await freePort());
    const ownsStore = options.storeDir === undefined;
    const storeDir = options.storeDir ?? (await mkdtemp(join(tmpdir(), 'flotilla-nats-')));
    const configFile = options.config === undefined ? undefined : `${resolve(storeDir)}.conf`;
    const server = new NatsServerProcess({
      binary,
      port,
      storeDir,
      ownsStore,
      configFile,
      args: [
        ...(configFile === undefined ? [] : ['-c', configFile]),
        ...(options.jetstream === false ? [] : ['-js']),
        ...(options.extraArgs ?? []),
      ],
      startTimeoutMs: options.startTimeoutMs ?? 15_000,
      onLog: options.onLog,
    });
    try {
      if (configFile !== undefined && options.config !== undefined) await writeOwnerOnly(configFile, options.config);
      await server.#spawn();
    } catch (error) {
      await server[Symbol.asyncDispose]();
      throw error;
    }
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

  /** Starts the server again on the same port, store directory and configuration file. */
  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    await this.#spawn();
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }

  /** Kills the server; removes the store directory and the configuration file when the store is its own. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.kill('SIGKILL');
    if (!this.#settings.ownsStore) return;
    await rm(this.storeDir, { recursive: true, force: true });
    if (this.configFile !== undefined) await rm(this.configFile, { force: true });
  }

  async #spawn(): Promise<void> {
    const { binary, port, storeDir, args, startTimeoutMs, onLog } = this.#settings;
    const child = spawn(binary, ['-a', '127.0.0.1', '-p', String(port), '-sd', storeDir, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.#child = child;
    // A nats-server must not outlive the process that started it (a crashed test worker, a killed launcher).
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    child.once('exit', () => process.removeListener('exit', reap));
    await new Promise<void>((resolve, reject) => {
      let starting = true;
      let output = '';
      const timer = setTimeout(
        () =>
          fail(
            new NatsEmbeddedError(
              NatsEmbeddedErrorCode.startFailed,
              `nats-server did not become ready in ${startTimeoutMs} ms:\n${output}`,
            ),
          ),
        startTimeoutMs,
      );
      const fail = (error: Error): void => {
        if (!starting) return;
        starting = false;
        clearTimeout(timer);
        reject(error);
      };
      child.once('error', fail);
      // 'close' comes after stderr is drained, so the error holds the server's last words (a config parse error, a port in use).
      child.once('close', (code, signal) =>
        fail(
          new NatsEmbeddedError(
            NatsEmbeddedErrorCode.startFailed,
            `nats-server exited (${code ?? signal}) before ready:\n${output}`,
          ),
        ),
      );
      // The log is read for the child's whole life, so a full pipe never blocks the server.
      forEachLine(child.stderr, (line) => {
        onLog?.(line);
        if (!starting) return;
        output += `${line}\n`;
        if (line.includes('Server is ready')) {
          starting = false;
          clearTimeout(timer);
          output = '';
          resolve();
        }
      });
    });
  }
}

/** Writes `text` to `path` readable by the owner only, also when the file already exists with wider permissions. */
async function writeOwnerOnly(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, 'w', 0o600);
  try {
    await handle.chmod(0o600);
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}
