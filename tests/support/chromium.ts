import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

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
