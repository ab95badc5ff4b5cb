import type { Sandbox } from '@flotilla/sandbox';
import { PerConversation } from '../core/per-conversation.js';
import type { BashSession } from './bash-session.js';

/** Starts a shell in `sandbox` with the working directory `cwd` (as the sandbox sees it). */
export type SessionFactory = (sandbox: Sandbox, cwd: string) => Promise<BashSession>;

/** One bash session per conversation, with calls on the same conversation serialized. */
export class TerminalSessions extends PerConversation {
  readonly #sessions = new Map<string, BashSession>();

  constructor(private readonly create: SessionFactory) {
    super();
  }

  get(conversationId: string): BashSession | undefined {
    return this.#sessions.get(conversationId);
  }

  /**
   * The live session, or a new one started in `cwd`. `restarted` is the shell that had exited in
   * the same sandbox; a shell of a sandbox that was stopped since (idle, new secrets) is replaced
   * without it: whoever stopped the sandbox tells the agent.
   */
  async acquire(
    conversationId: string,
    sandbox: Sandbox,
    cwd: string,
  ): Promise<{ session: BashSession; restarted: BashSession | undefined }> {
    const existing = this.#sessions.get(conversationId);
    if (existing !== undefined && existing.state !== 'exited' && existing.sandbox === sandbox)
      return { session: existing, restarted: undefined };
    if (existing !== undefined) await existing.close();
    const sameSandbox = existing?.sandbox === sandbox;
    const session = await this.create(sandbox, sameSandbox ? existing.cwd : cwd);
    this.#sessions.set(conversationId, session);
    return { session, restarted: sameSandbox ? existing : undefined };
  }

  async reset(conversationId: string, sandbox: Sandbox, cwd: string): Promise<BashSession> {
    await this.close(conversationId);
    const session = await this.create(sandbox, cwd);
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
