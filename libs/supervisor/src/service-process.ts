import { spawn, type ChildProcess } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import { createInterface } from 'node:readline';
import { allocatorEnv } from './allocator.js';

export type ServiceProcessOptions = {
  /** Display name, e.g. `step-worker-1`. */
  readonly name: string;
  /** The entry point: a TypeScript file (run with tsx) or a JavaScript bundle (run as it is; see bundleService). */
  readonly entry: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Variables of this process's environment the service must not inherit (e.g. `isModelSetting` for a tool runner). */
  readonly omitInherited?: (name: string) => boolean;
  readonly cwd?: string;
  /** Extra Node.js flags, e.g. `--cpu-prof` for profiling a service. */
  readonly nodeArgs?: readonly string[];
  /** How much nicer than the supervisor's own the process runs (added to its niceness, at most 19; see serviceNiceness). Default 0. */
  readonly niceness?: number;
  /** Restart after an unexpected exit (default true), with backoff. */
  readonly restart?: boolean;
  /** Receives every output line. */
  readonly onLine?: (name: string, line: string, stream: 'stdout' | 'stderr') => void;
  /** Told about exits and restarts. */
  readonly onExit?: (name: string, code: number | null, signal: NodeJS.Signals | null, restarting: boolean) => void;
  /** How long a graceful stop may take before SIGKILL. Default 10 s. */
  readonly stopTimeoutMs?: number;
  /**
   * Restarts in a row of a process that fails by itself within `quickExitMs` of its start (a
   * crash at start: bad settings, a missing dependency) before the supervisor gives up. Default 5.
   */
  readonly maxQuickRestarts?: number;
  /** Default 15 s. */
  readonly quickExitMs?: number;
  /** Told when the supervisor gives up on a process that keeps crashing at start, with its last output lines. */
  readonly onGiveUp?: (name: string, lastLines: readonly string[]) => void;
};

const KEPT_LINES = 20;

/** One exit of a supervised process that was not asked to stop: how it ended and what it printed last. */
export type UnexpectedExit = {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** How long it had run, in ms. */
  readonly ranMs: number;
  readonly lastLines: readonly string[];
};

/** One supervised service process. */
export class ServiceProcess {
  #child: ChildProcess | undefined;
  #stopping = false;
  #restarts = 0;
  #quickExits = 0;
  #gaveUp = false;
  #lastLines: string[] = [];
  readonly #unexpectedExits: UnexpectedExit[] = [];
  #exited: Promise<void> = Promise.resolve();

  constructor(readonly options: ServiceProcessOptions) {}

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get restarts(): number {
    return this.#restarts;
  }

  /** The supervisor stopped restarting it: it kept crashing at start. */
  get gaveUp(): boolean {
    return this.#gaveUp;
  }

  /** Its last output lines (at most 20), e.g. to say why it exited. */
  get lastLines(): readonly string[] {
    return this.#lastLines;
  }

  /** Its exits that nobody asked for (crashes, kills by others), oldest first, with the lines each printed last. */
  get unexpectedExits(): readonly UnexpectedExit[] {
    return this.#unexpectedExits;
  }

  start(): void {
    this.#stopping = false;
    const omit = this.options.omitInherited;
    const inherited = omit
      ? Object.fromEntries(Object.entries(process.env).filter(([name]) => !omit(name)))
      : process.env;
    const env = { ...inherited, ...this.options.env };
    const loader = /\.[cm]?ts$/.test(this.options.entry) ? ['--import', 'tsx'] : [];
    const child = spawn(process.execPath, [...(this.options.nodeArgs ?? []), ...loader, this.options.entry], {
      cwd: this.options.cwd,
      env: { ...env, ...allocatorEnv(env) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    // raising one's own child's niceness needs no privilege; a process already gone has nothing to lower
    if (this.options.niceness && child.pid !== undefined) {
      try {
        setPriority(child.pid, Math.min(19, getPriority() + this.options.niceness));
      } catch {
        // it exited at once: its exit is reported as any other
      }
    }
    const startedAt = Date.now();
    const reap = (): void => void child.kill('SIGKILL');
    process.once('exit', reap);
    for (const stream of ['stdout', 'stderr'] as const) {
      const lines = createInterface({ input: child[stream]! });
      lines.on('line', (line) => {
        this.#lastLines.push(line);
        if (this.#lastLines.length > KEPT_LINES) this.#lastLines.shift();
        this.options.onLine?.(this.name, line, stream);
      });
    }
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        process.removeListener('exit', reap);
        // it failed by itself soon after its start (a kill by a signal, like a chaos test's, is not that)
        const crashedAtStart =
          code !== null && code !== 0 && Date.now() - startedAt < (this.options.quickExitMs ?? 15_000);
        this.#quickExits = crashedAtStart ? this.#quickExits + 1 : 0;
        const unexpected = !this.#stopping && this.options.restart !== false;
        if (!this.#stopping)
          this.#unexpectedExits.push({ code, signal, ranMs: Date.now() - startedAt, lastLines: [...this.#lastLines] });
        this.#gaveUp = unexpected && this.#quickExits > (this.options.maxQuickRestarts ?? 5);
        const restarting = unexpected && !this.#gaveUp;
        this.options.onExit?.(this.name, code, signal, restarting);
        if (this.#gaveUp) this.options.onGiveUp?.(this.name, [...this.#lastLines]);
        if (restarting) {
          this.#restarts += 1;
          // growing delays while it keeps crashing at start; at once again after a long run
          const backoff = Math.min(5_000, 250 * 2 ** Math.min(this.#quickExits, 5));
          setTimeout(() => {
            if (!this.#stopping) this.start();
          }, backoff).unref();
        }
        resolve();
      });
    });
  }

  /** Kill without a graceful stop (like a crash). The supervisor restarts it unless told otherwise. */
  async kill(signal: NodeJS.Signals = 'SIGKILL', options: { restart?: boolean } = {}): Promise<void> {
    if (options.restart === false) this.#stopping = true;
    const exited = this.#exited;
    this.#child?.kill(signal);
    await exited;
  }

  /** Graceful stop: SIGTERM, then SIGKILL after the timeout. Never restarts. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (!this.running) return;
    const exited = this.#exited;
    this.#child?.kill('SIGTERM');
    const timer = setTimeout(() => this.#child?.kill('SIGKILL'), this.options.stopTimeoutMs ?? 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/**
 * Variables that configure or authenticate the model: provider keys (`*_API_KEY`, `OPENAI_*`,
 * `ANTHROPIC_*`) and the agent's settings (`FLOTILLA_AGENT*`, `FLOTILLA_LLM_*`). Services that do
 * not call the model (the tool runner) never get them.
 */
export function isModelSetting(name: string): boolean {
  return /_API_KEY$|^(OPENAI|ANTHROPIC|AZURE_OPENAI)_|^FLOTILLA_(AGENT|LLM_)/.test(name);
}
