import type { Sandbox } from '@flotilla/sandbox';
import { PerConversation } from '../core/per-conversation.js';
import type { SandboxedBrowser } from './sandboxed-browser.js';

/** Starts a browser in `sandbox`. */
export type BrowserFactory = (sandbox: Sandbox) => Promise<SandboxedBrowser>;

/**
 * One browser per conversation, started at its first use and kept until the conversation closes;
 * one that died (killed, or its sandbox stopped) is started again at the next use. Calls on the
 * same conversation run one at a time.
 */
export class BrowserSessions extends PerConversation {
  readonly #browsers = new Map<string, SandboxedBrowser>();

  constructor(private readonly start: BrowserFactory) {
    super();
  }

  /**
   * The live browser, or a new one. `restarted` says the previous browser of the same sandbox had
   * died (the agent loses its page); a browser of a sandbox stopped since is replaced silently, as
   * the terminal's shell is: whoever stopped the sandbox tells the agent.
   */
  async acquire(conversationId: string, sandbox: Sandbox): Promise<{ browser: SandboxedBrowser; restarted: boolean }> {
    const existing = this.#browsers.get(conversationId);
    if (existing !== undefined && existing.alive && existing.sandbox === sandbox)
      return { browser: existing, restarted: false };
    this.#browsers.delete(conversationId);
    if (existing !== undefined) await existing.close().catch(() => undefined);
    const browser = await this.start(sandbox);
    this.#browsers.set(conversationId, browser);
    return { browser, restarted: existing !== undefined && existing.sandbox === sandbox };
  }

  get(conversationId: string): SandboxedBrowser | undefined {
    return this.#browsers.get(conversationId);
  }

  async close(conversationId: string): Promise<void> {
    const browser = this.#browsers.get(conversationId);
    this.#browsers.delete(conversationId);
    await browser?.close();
  }

  async closeAll(): Promise<void> {
    const browsers = [...this.#browsers.values()];
    this.#browsers.clear();
    await Promise.allSettled(browsers.map((browser) => browser.close()));
  }
}
