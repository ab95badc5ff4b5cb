import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { chmod, mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Sandbox, SandboxProcess } from '@flotilla/sandbox';
import { OutputBuffer } from './output-buffer.js';
import { bashAnsiCQuote } from './terminal-text.js';

export type BashSessionOptions = {
  /** Where the shell runs. */
  readonly sandbox: Sandbox;
  /** Working directory as the shell sees it. */
  readonly cwd: string;
  /** Variables added to the sandbox's environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Bytes of output kept per observation before the middle is dropped. */
  readonly bufferCapacity: number;
};

/** Where sessions keep their stdin FIFOs: in the sandbox's private directory, which it sees read-only. */
const FIFO_FOLDER = 'terminal';

export type SessionState = 'idle' | 'running' | 'exited';

/** Raw output collected since the last observation, and how the command stands. */
export type Collected = {
  readonly output: string;
  /** Characters dropped from the middle of `output` (marked there by a note) to bound memory. */
  readonly dropped: number;
  readonly completed: boolean;
  readonly exitCode?: number;
  readonly cwd: string;
  /** Set when the shell itself exited (e.g. the command ran `exit`). */
  readonly shellExitCode?: number;
};

/**
 * One persistent `bash` process in a conversation's sandbox, driven through pipes. Commands are
 * sent on the shell's stdin wrapped in `eval`, read their own stdin from a FIFO in the service's
 * private directory, which the agent cannot replace
 * (so `is_input` reaches them and a reading process never eats the next command), and are
 * followed by a marker line carrying the exit code and the cwd.
 */
export class BashSession {
  #state: SessionState = 'idle';
  #cwd: string;
  #lastActivity = Date.now();
  #input: FileHandle | undefined;
  #shellExitCode: number | undefined;
  readonly #buffer: OutputBuffer;
  readonly #marker: string;
  readonly #listeners = new Set<() => void>();

  private constructor(
    /** The sandbox the shell runs in: a session outlives neither. */
    readonly sandbox: Sandbox,
    private readonly child: SandboxProcess,
    private readonly fifo: string,
    private readonly tempDir: string,
    cwd: string,
    marker: string,
    capacity: number,
  ) {
    this.#cwd = cwd;
    this.#marker = marker;
    this.#buffer = new OutputBuffer(marker, capacity);
    child.stdout.on('data', (chunk: Buffer) => this.#onOutput(chunk));
    child.stderr.on('data', (chunk: Buffer) => this.#onOutput(chunk));
    child.stdin.on('error', () => undefined);
    void child.exited.then(({ code, signal }) => {
      this.#shellExitCode = code ?? (signal === null ? 0 : 128 + (os.constants.signals[signal] ?? 0));
      this.#state = 'exited';
      this.#notify();
    });
  }

  static async start(options: BashSessionOptions): Promise<BashSession> {
    const { sandbox } = options;
    const makeFifo = async (): Promise<{ tempDir: string; fifo: string }> => {
      const folder = path.join(sandbox.privateDir, FIFO_FOLDER);
      await mkdir(folder, { recursive: true });
      const tempDir = await mkdtemp(path.join(folder, 'session-'));
      await chmod(tempDir, 0o755); // the sandbox's user opens the FIFO for reading
      const fifo = path.join(tempDir, 'stdin');
      await sandbox.makeFifo(fifo);
      return { tempDir, fifo };
    };
    // The sandbox kills the shell and everything it started when this process dies (even by
    // SIGKILL), so no command runs on after its tool runner is gone (an action cut off by a
    // crash is reported as such, never finished behind the log's back). The FIFO is made while
    // the sandbox starts: the shell opens it only for the first command.
    const [{ tempDir, fifo }, child] = await Promise.all([
      makeFifo(),
      sandbox.spawn('bash', ['--noprofile', '--norc'], {
        cwd: options.cwd,
        ...(options.env ? { env: options.env } : {}),
      }),
    ]);
    const marker = `__FLOTILLA_DONE_${randomBytes(6).toString('hex')}__`;
    const session = new BashSession(sandbox, child, fifo, tempDir, options.cwd, marker, options.bufferCapacity);
    // Merge stderr into stdout. The runner is a function, so a syntax error inside `eval` cannot
    // derail the shell's own parser, and the SIGINT trap (C-c) can abandon the rest of the command
    // with status 130 while the shell itself survives. SIGXFSZ is ignored (and so in every command):
    // a write past the sandbox's file-size limit fails with EFBIG, which the command reports in its
    // own words, instead of killing it without a word.
    child.stdin.write(
      `exec 2>&1\ntrap '[[ -n $__flotilla_busy ]] && return 130' INT\ntrap '' XFSZ\n` +
        `__flotilla_eval() { eval "$__flotilla_cmd" < '${sandbox.toInside(fifo)}'; }\n` +
        `__flotilla_run() { __flotilla_busy=1; __flotilla_eval; __flotilla_rc=$?; __flotilla_busy=; ` +
        `printf '\\n%s %s %s\\n' '${marker}' "$__flotilla_rc" "$PWD"; }\n`,
    );
    return session;
  }

  get state(): SessionState {
    return this.#state;
  }

  get cwd(): string {
    return this.#cwd;
  }

  get lastActivity(): number {
    return this.#lastActivity;
  }

  /** Start a command; the caller then waits with `waitForChange` and reads with `collect`. */
  async run(command: string): Promise<void> {
    if (this.#state !== 'idle') throw new Error(`cannot run a command while the shell is ${this.#state}`);
    this.#input = await open(this.fifo, constants.O_RDWR);
    this.#state = 'running';
    this.#lastActivity = Date.now();
    this.child.stdin.write(`__flotilla_cmd=${bashAnsiCQuote(command)}; __flotilla_run\n`);
  }

  /** Write to the running command's stdin. */
  async write(text: string): Promise<void> {
    this.#lastActivity = Date.now();
    await this.#input?.write(text);
  }

  /** Close the running command's stdin (C-d). */
  async closeInput(): Promise<void> {
    this.#lastActivity = Date.now();
    const input = this.#input;
    this.#input = undefined;
    await input?.close();
  }

  /** Send a signal to every process of the shell's process group (the shell traps SIGINT). */
  signal(signal: NodeJS.Signals): void {
    this.#lastActivity = Date.now();
    if (this.#state === 'exited') return;
    this.child.signal(signal);
  }

  /** Resolve on the next output, completion or exit, or after `ms`. */
  waitForChange(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#listeners.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#listeners.add(done);
    });
  }

  /** Whether the running command has printed its completion marker. */
  get completed(): boolean {
    return this.#buffer.marker !== undefined;
  }

  /** Output since the last call; marks the session idle once the command completed. */
  async collect(): Promise<Collected> {
    const taken = this.#buffer.take(this.#state === 'exited');
    if (taken.marker !== undefined) {
      this.#cwd = taken.marker.cwd;
      this.#state = this.#state === 'exited' ? 'exited' : 'idle';
      await this.closeInput();
      return {
        output: taken.text,
        dropped: taken.dropped,
        completed: true,
        exitCode: taken.marker.exitCode,
        cwd: this.#cwd,
      };
    }
    if (this.#state === 'exited') {
      await this.closeInput();
      return {
        output: taken.text,
        dropped: taken.dropped,
        completed: true,
        cwd: this.#cwd,
        shellExitCode: this.#shellExitCode ?? 0,
      };
    }
    return { output: taken.text, dropped: taken.dropped, completed: false, cwd: this.#cwd };
  }

  /** Kill the shell and everything it started. */
  async close(): Promise<void> {
    if (this.#state !== 'exited') {
      this.signal('SIGKILL');
      await Promise.race([this.child.exited, new Promise((resolve) => setTimeout(resolve, 2_000))]);
    }
    this.child.stdin.destroy();
    this.child.stdout.destroy();
    this.child.stderr.destroy();
    await this.closeInput().catch(() => undefined);
    await rm(this.tempDir, { recursive: true, force: true });
  }

  #onOutput(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#lastActivity = Date.now();
    this.#buffer.append(chunk);
    this.#notify();
  }

  #notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}
