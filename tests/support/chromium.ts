import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** CHROMIUM_PATH, else the first Chromium or Chrome on PATH; undefined when there is none (the browser tests skip). */
export function findChromium(): string | undefined {
  const fromEnv = process.env['CHROMIUM_PATH'];
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    try {
      const path = execFileSync('which', [name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (path) return path;
    } catch {
      // not on PATH
    }
  }
  return undefined;
}

/** What a browser test prints when it skips. */
export const MISSING_BROWSER =
  'SKIPPED: no Chromium browser found (install chromium, or set CHROMIUM_PATH to a Chromium or Chrome binary)';

/**
 * Where a browser test saves a screenshot of the docs (`docs/images/<name>`): there with
 * FLOTILLA_UPDATE_SCREENSHOT=1, which refreshes the docs' images; in the temp directory otherwise,
 * so a test run leaves the tree clean.
 */
export function screenshotPath(name: string): string {
  return process.env['FLOTILLA_UPDATE_SCREENSHOT']
    ? fileURLToPath(new URL(`../../docs/images/${name}`, import.meta.url))
    : join(tmpdir(), `flotilla-${name}`);
}
