import { createHash } from 'node:crypto';
import type { Sandbox, SandboxProvider, SandboxSpec } from './sandbox.js';

/** Why a conversation's sandbox was stopped since its last use. */
export const RestartReason = {
  /** Nothing ran in it for the idle time. */
  Idle: 'idle',
  /** Its environment changed (a secret was set or removed). */
  Environment: 'environment',
} as const;
export type RestartReason = (typeof RestartReason)[keyof typeof RestartReason];

export type Acquired = {
  readonly sandbox: Sandbox;
  /** Set when this conversation had a sandbox that was stopped since it was last used. */
  readonly restarted?: RestartReason;
};

export type SandboxPoolOptions = {
  readonly idleStopMs: number;
  /**
   * Sandboxes holding something (a process, a container) kept open at once; past it the least
   * recently used is stopped as idle. One that holds nothing is not counted (it costs nothing),
   * nor noted as restarted when stopped (nothing was lost).
   */
  readonly maxOpen?: number;
  readonly onError?: (error: unknown, id: string) => void;
};

type Entry = { sandbox: Sandbox; fingerprint: string; lastUsed: number; users: number };

/**
 * The open sandbox of each conversation: opened on first use, reused while its environment is
 * unchanged, stopped when idle (the next use opens a new one and says so).
 */
export class SandboxPool {
  readonly #open = new Map<string, Entry>();
  /** Conversations whose sandbox was stopped, and why, until their next use. */
  readonly #stopped = new Map<string, RestartReason>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(
    private readonly provider: SandboxProvider,
    private readonly options: SandboxPoolOptions,
  ) {
    this.#sweeper = setInterval(
      () => void this.sweep(),
      Math.max(250, Math.min(60_000, Math.floor(options.idleStopMs / 4))),
    );
    this.#sweeper.unref();
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * Runs `task` with the conversation's sandbox, which is not stopped as idle meanwhile. A
   * sandbox whose environment differs from `spec.env` is replaced first.
   */
  async use<T>(spec: SandboxSpec, task: (acquired: Acquired) => Promise<T>): Promise<T> {
    const acquired = await this.#acquire(spec);
    const entry = this.#open.get(spec.id);
    if (entry) entry.users += 1;
    try {
      return await task(acquired);
    } finally {
      if (entry) {
        entry.users -= 1;
        entry.lastUsed = Date.now();
      }
    }
  }

  /** Stops the conversation's sandbox and forgets it (the conversation was deleted). */
  async remove(id: string): Promise<void> {
    this.#stopped.delete(id);
    const entry = this.#open.get(id);
    this.#open.delete(id);
    await entry?.sandbox.close();
  }

  /** The workspace is being deleted, its sandboxes removed: what the provider holds of it goes (its filesystem). */
  async releaseWorkspace(workspace: string): Promise<void> {
    await this.provider.releaseWorkspace?.(workspace);
  }

  /** Stops every sandbox idle for longer than the idle time. */
  async sweep(now = Date.now()): Promise<void> {
    const idle = [...this.#open].filter(
      ([, entry]) => entry.users === 0 && now - entry.lastUsed >= this.options.idleStopMs,
    );
    await Promise.all(idle.map(([id]) => this.#stop(id, RestartReason.Idle)));
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    const entries = [...this.#open.values()];
    this.#open.clear();
    await Promise.allSettled(entries.map((entry) => entry.sandbox.close()));
  }

  async #acquire(spec: SandboxSpec): Promise<Acquired> {
    const fingerprint = fingerprintOf(spec);
    const entry = this.#open.get(spec.id);
    if (entry && entry.fingerprint === fingerprint) {
      this.#open.delete(spec.id);
      this.#open.set(spec.id, entry); // most recently used last
      return { sandbox: entry.sandbox };
    }
    if (entry) await this.#stop(spec.id, RestartReason.Environment);
    const sandbox = await this.provider.open(spec);
    this.#open.set(spec.id, { sandbox, fingerprint, lastUsed: Date.now(), users: 0 });
    const restarted = this.#stopped.get(spec.id);
    this.#stopped.delete(spec.id);
    await this.#evictBeyondLimit();
    return restarted === undefined ? { sandbox } : { sandbox, restarted };
  }

  async #evictBeyondLimit(): Promise<void> {
    const maxOpen = this.options.maxOpen ?? 2_000;
    let holding = 0;
    for (const entry of this.#open.values()) if (entry.sandbox.holding) holding += 1;
    for (const [id, entry] of this.#open) {
      if (holding <= maxOpen) return;
      if (entry.users !== 0 || !entry.sandbox.holding) continue;
      holding -= 1;
      await this.#stop(id, RestartReason.Idle);
    }
  }

  async #stop(id: string, reason: RestartReason): Promise<void> {
    const entry = this.#open.get(id);
    if (!entry) return;
    this.#open.delete(id);
    // a sandbox that held nothing lost nothing: its next use is not told of a restart
    if (entry.sandbox.holding) this.#stopped.set(id, reason);
    if (this.#stopped.size > 10_000) this.#stopped.delete(this.#stopped.keys().next().value as string);
    await entry.sandbox.close().catch((error: unknown) => this.options.onError?.(error, id));
  }
}

/** What decides whether an open sandbox still fits: its workspace and its environment. */
function fingerprintOf(spec: SandboxSpec): string {
  const env = Object.entries(spec.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify([spec.workspace, env]))
    .digest('base64url');
}
