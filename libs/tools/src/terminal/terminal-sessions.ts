import type { BashSession } from './bash-session.js';

export type SessionFactory = (cwd: string) => Promise<BashSession>;

/** One bash session per conversation, with calls on the same conversation serialized. */
export class TerminalSessions {
  readonly #sessions = new Map<string, BashSession>();
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(private readonly create: SessionFactory) {}

  /** Run `task` exclusively for this conversation. */
  exclusive<T>(conversationId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(conversationId) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => undefined);
    this.#queues.set(conversationId, settled);
    void settled.then(() => {
      if (this.#queues.get(conversationId) === settled) this.#queues.delete(conversationId);
    });
    return next;
  }

  get(conversationId: string): BashSession | undefined {
    return this.#sessions.get(conversationId);
  }

  /** The live session, or a new one started in `cwd`. */
  async acquire(conversationId: string, cwd: string): Promise<{ session: BashSession; restarted: BashSession | undefined }> {
    const existing = this.#sessions.get(conversationId);
    if (existing !== undefined && existing.state !== 'exited') return { session: existing, restarted: undefined };
    if (existing !== undefined) await existing.close();
    const session = await this.create(existing?.cwd ?? cwd);
    this.#sessions.set(conversationId, session);
    return { session, restarted: existing };
  }

  async reset(conversationId: string, cwd: string): Promise<BashSession> {
    await this.close(conversationId);
    const session = await this.create(cwd);
    this.#sessions.set(conversationId, session);
    return session;
  }

  async close(conversationId: string): Promise<void> {
    const session = this.#sessions.get(conversationId);
    this.#sessions.delete(conversationId);
    await session?.close();
  }

  async closeAll(): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    await Promise.allSettled(sessions.map((session) => session.close()));
  }
}
