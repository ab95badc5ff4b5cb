import type { Sandbox } from '@flotilla/sandbox';
import type { ToolContext } from '../core/context.js';
import { describeError } from '../core/errors.js';
import type { ToolContent, ToolResult } from '../core/result.js';
import { errorResult } from '../core/result.js';
import type { ToolDefinition } from '../core/tool-definition.js';
import { defineTool } from '../core/tool-definition.js';
import { BrowserActionError, performAction, type ActionTimeouts } from './browser-actions.js';
import { BrowserParameters } from './browser-parameters.js';
import { BrowserSessions } from './browser-sessions.js';
import { describeDownloads } from './page-observation.js';
import { DOWNLOADS_FOLDER, SandboxedBrowser } from './sandboxed-browser.js';

export { BrowserParameters } from './browser-parameters.js';

export type BrowserToolOptions = {
  /** Longest Chromium takes to start inside the sandbox (default 60 s: a busy machine starts it slowly). */
  readonly startTimeoutSeconds?: number;
  /** Longest a page load is waited for (default 30 s). */
  readonly navigationTimeoutSeconds?: number;
  /** Longest a click or typing waits for its element (default 10 s). */
  readonly elementTimeoutSeconds?: number;
  /** The page's size in CSS pixels (default 1280×800): what a screenshot shows. */
  readonly viewport?: { readonly width: number; readonly height: number };
};

export type BrowserTool = ToolDefinition<BrowserParameters> & {
  /** Stop the browser of one conversation. */
  closeConversation(conversationId: string): Promise<void>;
  /** The host pid of the sandboxed process a conversation's browser runs in, while it has one (for tests and operators). */
  browserPid(conversationId: string): number | undefined;
};

export const BROWSER_TOOL_NAME = 'browser';

const DESCRIPTION = `Browse the web with a headless Chromium that runs inside your sandbox (it reaches only what your sandbox's network allows). One page at a time; it stays open between calls.
* navigate {url}: open an http(s) URL, a file:// URL of a workspace file, or about:blank.
* read: the page as text (its accessibility tree); each element you can act on has an id [ref=eN].
* click {element}, type {element, text, submit?}: act on an element by its id from the latest page text; type replaces the field's text, submit presses Enter.
* scroll {direction: up|down}, back: scroll by most of a screen, or go back in the history.
* screenshot: an image of the visible part of the page.
After navigate, click, type, scroll and back you get the new URL, title and page text. Downloads are saved in the workspace's ${DOWNLOADS_FOLDER}/ folder.`;

export function createBrowserTool(options: BrowserToolOptions = {}): BrowserTool {
  const startTimeoutMs = (options.startTimeoutSeconds ?? 60) * 1_000;
  const viewport = options.viewport ?? { width: 1280, height: 800 };
  const timeouts: ActionTimeouts = {
    navigationMs: (options.navigationTimeoutSeconds ?? 30) * 1_000,
    elementMs: (options.elementTimeoutSeconds ?? 10) * 1_000,
  };
  const sessions = new BrowserSessions((sandbox: Sandbox) =>
    SandboxedBrowser.start(sandbox, { startTimeoutMs, viewport }),
  );

  async function run(params: BrowserParameters, context: ToolContext): Promise<ToolResult> {
    const { browser, restarted } = await sessions.acquire(context.conversationId, context.sandbox);
    const notes = restarted ? ['[The browser had stopped; a new one was started, on an empty page.]'] : [];
    let outcome;
    try {
      outcome = await performAction(await browser.page(), params.action, context.sandbox.workspacePath, timeouts);
    } catch (error) {
      if (!(error instanceof BrowserActionError) && !browser.alive)
        return errorResult(
          [
            ...notes,
            `The browser stopped during the action: ${firstLine(error)}. Try again: the next call starts a new one.`,
          ].join('\n'),
        );
      const message = error instanceof BrowserActionError ? error.message : firstLine(error);
      return errorResult([...notes, message].join('\n'));
    }
    notes.push(...describeDownloads(browser.takeDownloads(), context.sandbox.workspacePath));
    const content: ToolContent[] = [...outcome.content];
    if (notes.length > 0) {
      const first = content[0];
      content[0] = first?.type === 'text' ? { type: 'text', text: `${notes.join('\n')}\n${first.text}` } : first!;
    }
    const redact = context.redact;
    return {
      content: redact
        ? content.map((part) => (part.type === 'text' ? { type: 'text', text: redact(part.text) } : part))
        : content,
      isError: outcome.isError,
    };
  }

  const closeConversation = (conversationId: string): Promise<void> => sessions.close(conversationId);
  const tool = defineTool({
    name: BROWSER_TOOL_NAME,
    description: DESCRIPTION,
    parameters: BrowserParameters,
    annotations: { readOnly: false, destructive: false, idempotent: false, openWorld: true },
    resources: (_params, context) => [`browser:${context.conversationId}`],
    async execute(params, context) {
      if (context.signal.aborted) return errorResult('The run was cancelled before the browser acted.');
      try {
        return await sessions.exclusive(context.conversationId, () => run(params, context));
      } catch (error) {
        context.logger.warn({ err: error }, 'browser failure');
        return errorResult(`The browser failed: ${describeError(error)}`);
      }
    },
    close: () => sessions.closeAll(),
    closeConversation,
  });
  return { ...tool, closeConversation, browserPid: (conversationId) => sessions.get(conversationId)?.pid };
}

/** Playwright's errors carry a call log after their first line: the model needs only the first. */
function firstLine(error: unknown): string {
  return (describeError(error).split('\n')[0] ?? '').replace(/^[a-zA-Z.]+: /, '');
}
