import type { Page } from 'playwright-core';
import type { ToolContent } from '../core/result.js';
import type { BrowserAction } from './browser-parameters.js';
import { describePage } from './page-observation.js';
import { checkUrl } from './url-policy.js';

export type ActionTimeouts = {
  /** Longest a page load (navigate, back, or what a click starts) is waited for. */
  readonly navigationMs: number;
  /** Longest a click or a typing waits for its element. */
  readonly elementMs: number;
};

/** What an action gives the model: its content, or an error it can act on. */
export type ActionOutcome = { readonly content: ToolContent[]; readonly isError: boolean };

/** Thrown for what the model asked wrong (a refused URL, no page to go back to): shown as is. */
export class BrowserActionError extends Error {
  override readonly name = 'BrowserActionError';
}

/** Runs one action on the page; after any that may change the page, shows the page as it is then. */
export async function performAction(
  page: Page,
  action: BrowserAction,
  workspacePath: string,
  timeouts: ActionTimeouts,
): Promise<ActionOutcome> {
  switch (action.type) {
    case 'navigate': {
      const verdict = checkUrl(action.url, workspacePath);
      if (!verdict.ok) throw new BrowserActionError(verdict.reason);
      const response = await page.goto(verdict.url, { waitUntil: 'load', timeout: timeouts.navigationMs });
      const status =
        response && !response.ok() ? [`[The server answered ${response.status()} ${response.statusText()}.]`] : [];
      return pageOutcome(page, status);
    }
    case 'click':
      await page.getByRef(action.element).click({ timeout: timeouts.elementMs });
      await settle(page, timeouts);
      return pageOutcome(page, []);
    case 'type': {
      const field = page.getByRef(action.element);
      await field.fill(action.text, { timeout: timeouts.elementMs });
      if (action.submit) await field.press('Enter', { timeout: timeouts.elementMs });
      await settle(page, timeouts);
      return pageOutcome(page, []);
    }
    case 'scroll': {
      const height = page.viewportSize()?.height ?? 800;
      await page.mouse.wheel(0, (action.direction === 'down' ? 1 : -1) * Math.round(height * 0.8));
      await settle(page, timeouts);
      // an expression, not a function: this lib is compiled without the DOM's types
      const position = await page.evaluate<string>(
        '`[Scrolled to ${Math.round(window.scrollY)} of ${Math.max(0, document.documentElement.scrollHeight - window.innerHeight)} pixels.]`',
      );
      return pageOutcome(page, [position]);
    }
    case 'back': {
      const before = page.url();
      const response = await page.goBack({ waitUntil: 'load', timeout: timeouts.navigationMs });
      // null: no history entry to go back to, or one of the same document (an anchor)
      if (response === null && page.url() === before)
        throw new BrowserActionError('There is no previous page to go back to.');
      return pageOutcome(page, []);
    }
    case 'read':
      return pageOutcome(page, []);
    case 'screenshot': {
      const png = await page.screenshot({ type: 'png', timeout: timeouts.navigationMs });
      const size = page.viewportSize();
      const title = await page.title().catch(() => '');
      return {
        content: [
          {
            type: 'text',
            text: `Screenshot of ${page.url()}${title ? ` ("${title}")` : ''}, the visible part${size ? ` (${size.width}×${size.height})` : ''}.`,
          },
          { type: 'image', data: png.toString('base64'), mediaType: 'image/png' },
        ],
        isError: false,
      };
    }
  }
}

async function pageOutcome(page: Page, notes: readonly string[]): Promise<ActionOutcome> {
  return { content: [{ type: 'text', text: [...notes, await describePage(page)].join('\n') }], isError: false };
}

/** Waits for what an action started to load, as long as the navigation timeout; a page still loading is shown as it is. */
async function settle(page: Page, timeouts: ActionTimeouts): Promise<void> {
  await page.waitForLoadState('load', { timeout: timeouts.navigationMs }).catch(() => undefined);
}
