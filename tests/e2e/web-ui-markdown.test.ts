import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER } from '../support/chromium.js';
import { startTestSystem } from '../support/system.js';

const executablePath = findChromium();
const describeWithBrowser = executablePath ? describe : describe.skip;
if (!executablePath) console.warn(`web UI markdown test ${MISSING_BROWSER}`);

/** A message in markdown, with everything a hostile one might try to run or load. */
const HOSTILE = [
  '## Plan',
  '',
  '- read the **code**',
  '- run `npm test`',
  '',
  '```ts',
  'const answer: number = 42;',
  '```',
  '',
  'See [the docs](https://example.test/docs) and [this](javascript:window.__pwned=1).',
  '',
  '<script>window.__pwned = 2</script>',
  '<img src="x" onerror="window.__pwned = 3">',
  '<a href="#" onclick="window.__pwned = 4">click</a>',
  '<iframe src="javascript:window.__pwned = 5"></iframe>',
  '<svg onload="window.__pwned = 6"></svg>',
  '<style>body { display: none }</style>',
].join('\n');

describeWithBrowser('web UI: markdown', () => {
  it('renders messages as sanitized markdown with highlighted code: nothing of the HTML in them runs or loads', async () => {
    await using system = await startTestSystem({ gateway: true });
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      // the user's message is the hostile markdown; the run's first step is the brain's task
      const created = await system.api('POST', '/conversations', {
        id: 'md',
        title: 'markdown',
        message: `${HOSTILE}\n\n${taskMessage({ id: 'md', steps: 1, effects: system.effects })}`,
        run: true,
      });
      expect(created.status, created.text).toBe(201);
      await system.waitForStatus([{ tenant: 'acme', conversation: 'md' }], ['finished'], 60_000);

      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await page.goto(`${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}`);
      await page.locator('[data-testid="conversation-item"][data-id="md"]').click();
      const message = page.getByTestId('user-message').first();
      await expect.poll(() => message.locator('h2').textContent(), { timeout: 15_000 }).toBe('Plan');
      const text = message.locator('.markdown');
      expect(await text.locator('li').allTextContents()).toEqual(['read the code', 'run npm test']);
      expect(await text.locator('strong').textContent()).toBe('code');
      // the code block, highlighted as TypeScript
      const code = text.locator('pre.code-block code.language-ts');
      expect(await code.textContent()).toBe('const answer: number = 42;');
      expect(await code.locator('.hljs-keyword').first().textContent()).toBe('const');
      // a web link opens apart and tells nothing; a javascript: one, or one of the HTML's, is no link
      const links = text.locator('a');
      expect(
        await links.evaluateAll((anchors) =>
          anchors.map((anchor) => [
            anchor.getAttribute('href'),
            anchor.getAttribute('target'),
            anchor.getAttribute('rel'),
          ]),
        ),
      ).toEqual([
        ['https://example.test/docs', '_blank', 'noopener noreferrer'],
        [null, '_blank', 'noopener noreferrer'],
        [null, '_blank', 'noopener noreferrer'],
      ]);
      // nothing that runs or loads: no script, image, frame, svg or style; no event attribute anywhere
      expect(await text.locator('script, img, iframe, svg, style, object, embed').count()).toBe(0);
      const handlers = await text.evaluate((root) =>
        [...root.querySelectorAll('*')]
          .flatMap((element) => [...element.attributes].map((attribute) => attribute.name))
          .filter((name) => name.startsWith('on')),
      );
      expect(handlers).toEqual([]);
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      await message.locator('a', { hasText: 'click' }).click();
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.locator('body').isVisible()).toBe(true);

      // the agent's answer and the finish text are markdown too (a paragraph, newlines kept as breaks)
      const answer = page.getByTestId('agent-message').last();
      await expect
        .poll(() => answer.locator('.markdown p').textContent(), { timeout: 15_000 })
        .toContain('Done: 1 steps for md.');
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
