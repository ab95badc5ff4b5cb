import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Conversation, TenantUsage } from '@flotilla/api';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER } from '../support/chromium.js';
import { startTestSystem } from '../support/system.js';

const executablePath = findChromium();
const describeWithBrowser = executablePath ? describe : describe.skip;
if (!executablePath) console.warn(`web UI queue test ${MISSING_BROWSER}`);

describeWithBrowser('web UI: queued runs and usage', () => {
  it("shows a waiting conversation's place in its tenant's queue, and drops it once its run starts; shows the tenant's usage today beside its budget", async () => {
    await using system = await startTestSystem({
      gateway: true,
      gatewayEnv: { FLOTILLA_MAX_RUNNING_PER_TENANT: '1' },
      env: { FLOTILLA_TENANT_BUDGETS: JSON.stringify({ tenants: { acme: { day: { tokens: 1_000_000 } } } }) },
    });
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      const create = async (id: string, steps: number) =>
        (
          await system.api('POST', '/conversations', {
            id,
            title: id,
            message: taskMessage({ id, steps, effects: system.effects, latencyMs: 300 }),
            run: true,
          })
        ).body as Conversation;
      expect((await create('ui-first', 6)).status).toBe('running');
      expect((await create('ui-waiting', 1)).queue?.position).toBe(1);

      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await page.goto(`${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}`);
      const waiting = page.locator('[data-testid="conversation-item"][data-id="ui-waiting"]');
      await expect
        .poll(() => waiting.getByTestId('queue-position').textContent(), { timeout: 15_000 })
        .toBe('queued #1');
      expect(
        await page
          .locator('[data-testid="conversation-item"][data-id="ui-first"]')
          .getByTestId('queue-position')
          .count(),
      ).toBe(0);
      // the first run ends, the queued one starts: the list (refreshed) no longer shows it queued
      await expect
        .poll(
          async () => {
            await page.locator('#refresh').click();
            return waiting.getByTestId('queue-position').count();
          },
          { timeout: 60_000, interval: 500 },
        )
        .toBe(0);
      // the tenant's usage today, as the step workers counted it, against its daily budget
      const label = page.getByTestId('tenant-usage');
      await expect
        .poll(
          async () => {
            await page.reload();
            return label.textContent();
          },
          { timeout: 30_000, interval: 1_000 },
        )
        .toMatch(/^today \$0\.00, [1-9][\d,]* tokens of 1,000,000 tokens$/);
      const counted = ((await system.api('GET', '/usage')).body as TenantUsage).usage.day.tokens;
      expect(counted).toBeGreaterThan(0);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
