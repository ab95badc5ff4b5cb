import type { Page } from 'playwright-core';
import { describeError } from '../core/errors.js';
import { DOWNLOADS_FOLDER, type FinishedDownload } from './sandboxed-browser.js';

/** Characters of page text the model is shown; past it the text is cut with a note. */
export const PAGE_TEXT_LIMIT = 20_000;

/** Longest reading the page's text may take (a page busy in a script loop must not hold the call). */
const SNAPSHOT_TIMEOUT_MS = 10_000;

/**
 * The page as the model reads it: its URL and title, then its accessibility tree as text, each
 * element the model can act on marked `[ref=eN]` (Playwright's AI snapshot: ids numbered in
 * document order, stable for an element while the page lives), cut at `limit` characters.
 */
export async function describePage(page: Page, limit = PAGE_TEXT_LIMIT): Promise<string> {
  const header = `URL: ${page.url()}\nTitle: ${await page.title().catch(() => '')}`;
  let snapshot: string;
  try {
    snapshot = await page.ariaSnapshot({ mode: 'ai', timeout: SNAPSHOT_TIMEOUT_MS });
  } catch (error) {
    return `${header}\n[The page text could not be read: ${describeError(error).split('\n')[0] ?? ''}]`;
  }
  if (snapshot.length <= limit) return `${header}\n\n${snapshot}`;
  const cut = snapshot.slice(0, snapshot.lastIndexOf('\n', limit) > 0 ? snapshot.lastIndexOf('\n', limit) : limit);
  return `${header}\n\n${cut}\n[The page text was cut at ${limit} of its ${snapshot.length} characters: scroll, or act on what is shown.]`;
}

/** A line per download finished since the last action. */
export function describeDownloads(downloads: readonly FinishedDownload[], workspacePath: string): string[] {
  return downloads.map((download) =>
    download.state === 'completed'
      ? `[Downloaded "${download.name}" to ${workspacePath}/${DOWNLOADS_FOLDER}/ (a name already taken gets a number added).]`
      : `[The download of "${download.name}" was cancelled.]`,
  );
}
