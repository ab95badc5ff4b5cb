import AxeBuilder from '@axe-core/playwright';
import { chromium, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER } from '../support/chromium.js';
import { startTestSystem } from '../support/system.js';

const executablePath = findChromium();
const describeWithBrowser = executablePath ? describe : describe.skip;
if (!executablePath) console.warn(`web UI accessibility test ${MISSING_BROWSER}`);

/** axe's serious and critical violations on the page as it is, each as `rule: targets`. */
async function violations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

describeWithBrowser('web UI: accessibility', () => {
  it('has no serious axe violations on its screens, in light and dark', async () => {
    await using system = await startTestSystem({ gateway: true });
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      const created = await system.api('POST', '/conversations', {
        id: 'a11y',
        title: 'Accessible',
        message: `Check it.\n\n${taskMessage({ id: 'a11y', steps: 1, effects: system.effects })}`,
        run: true,
      });
      expect(created.status, created.text).toBe(201);
      await system.waitForStatus([{ tenant: 'acme', conversation: 'a11y' }], ['finished'], 60_000);
      for (const colorScheme of ['light', 'dark'] as const) {
        const context = await browser.newContext({ colorScheme });
        const page = await context.newPage();
        await page.goto(`${system.gatewayUrl}/`);
        await expect.poll(() => page.getByTestId('key-form').isVisible()).toBe(true);
        expect(await violations(page), `key screen, ${colorScheme}`).toEqual([]);
        await page.goto(`${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}&c=a11y`);
        await expect.poll(() => page.getByTestId('agent-message').count(), { timeout: 15_000 }).toBeGreaterThan(0);
        expect(await violations(page), `conversation, ${colorScheme}`).toEqual([]);
        await context.close();
      }
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('runs the main flows from the keyboard alone: create and run, approve, send and run, interrupt', async () => {
    // every action waits for the user's approval, so the run stops at the confirmation panel
    await using system = await startTestSystem({ gateway: true, agent: { confirmation: { mode: 'always' } } });
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      // a context of its own: axe opens a page in it for its report
      const page = await (await browser.newContext()).newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await page.goto(`${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}`);
      await expect.poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      /** Tab (or Shift+Tab, to go back) until the control with this test id has the focus, as a keyboard user would. */
      const tabTo = async (testId: string, key: 'Tab' | 'Shift+Tab' = 'Tab'): Promise<void> => {
        for (let presses = 0; presses < 150; presses += 1) {
          if ((await page.evaluate<string | undefined>('document.activeElement?.dataset?.testid')) === testId) return;
          await page.keyboard.press(key);
        }
        throw new Error(`${testId} was not reached with Tab`);
      };
      const status = () => page.getByTestId('conversation-status').getAttribute('data-status');

      await tabTo('new-message');
      // each model call takes 3 s: long enough to reach the Interrupt button while a run is busy
      await page.keyboard.type(taskMessage({ id: 'keys', steps: 1, effects: system.effects, latencyMs: 3_000 }));
      await tabTo('new-create-run');
      await page.keyboard.press('Enter');
      await expect.poll(status, { timeout: 30_000 }).toBe('waiting_for_confirmation');
      // the confirmation panel, checked by axe too while it shows
      expect(await violations(page), 'confirmation panel').toEqual([]);
      await tabTo('btn-approve');
      await page.keyboard.press('Enter');
      await expect.poll(status, { timeout: 30_000 }).toBe('finished');
      expect(await system.readEffects()).toEqual(['keys 0 0']);

      // a message from the composer: Ctrl+Enter sends it and runs; the run is interrupted from the keyboard
      await tabTo('message-input');
      await page.keyboard.type('Once more, please.');
      await page.keyboard.press('Control+Enter');
      await expect.poll(status, { timeout: 15_000 }).toBe('running');
      expect(await page.getByTestId('user-message').count()).toBe(2);
      await tabTo('btn-interrupt', 'Shift+Tab');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.locator('[data-type="interrupt"]').count(), { timeout: 15_000 }).toBe(1);
      await expect.poll(status, { timeout: 15_000 }).not.toBe('running');
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
