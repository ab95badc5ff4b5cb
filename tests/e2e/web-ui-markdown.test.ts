import { draftEvent } from '@flotilla/events';
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

      // an edit's change shows in place as a diff: a replacement, and a patch
      const edited = { tenant: 'acme', conversation: 'md-edit' };
      const agent = { ...edited, source: 'agent' as const };
      const edit = (id: string, tool: string, input: Record<string, unknown>) =>
        draftEvent(agent, 'action', {
          tool_call_id: id,
          tool_name: tool,
          arguments: JSON.stringify(input),
          input,
          thought: [],
          response_id: 'r1',
          security_risk: 'low',
        });
      await system.log.append(
        edited,
        [
          draftEvent({ ...edited, source: 'user' }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'Fix it.' }],
          }),
          edit('call-1', 'file_editor', {
            command: 'str_replace',
            path: '/workspace/a.ts',
            old_str: 'const a = 1;\nconst b = 2;\n',
            new_str: 'const a = 1;\nconst b = 3;\n',
          }),
          edit('call-2', 'apply_patch', { patch: '--- a/b.ts\n+++ b/b.ts\n@@ -1 +1 @@\n-old line\n+new line\n' }),
        ],
        { expected: { streamSeq: 0, lastSeq: 0 } },
      );
      await page.locator('[data-testid="conversation-item"][data-id="md-edit"]').click();
      const diffs = page.getByTestId('edit-diff');
      await expect.poll(() => diffs.count(), { timeout: 15_000 }).toBe(2);
      const lines = (index: number) =>
        diffs
          .nth(index)
          .locator('.diff-line')
          .evaluateAll((spans) => spans.map((span) => `${span.getAttribute('data-kind')} ${span.textContent}`));
      expect(await lines(0)).toEqual(['same   const a = 1;\n', 'del - const b = 2;\n', 'add + const b = 3;\n']);
      expect(await lines(1)).toEqual([
        'meta --- a/b.ts\n',
        'meta +++ b/b.ts\n',
        'meta @@ -1 +1 @@\n',
        'del - old line\n',
        'add + new line\n',
      ]);
      await page.locator('[data-testid="conversation-item"][data-id="md"]').click();

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
