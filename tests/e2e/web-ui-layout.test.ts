import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { draftEvent } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER, screenshotPath } from '../support/chromium.js';
import { startTestSystem } from '../support/system.js';

const executablePath = findChromium();
const describeWithBrowser = executablePath ? describe : describe.skip;
if (!executablePath) console.warn(`web UI layout test ${MISSING_BROWSER}`);

const background = (page: Page): Promise<string> =>
  page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
const LIGHT = 'rgb(246, 247, 249)';
const DARK = 'rgb(13, 17, 23)';

async function screenshot(page: Page, name: string): Promise<void> {
  const path = screenshotPath(name);
  await mkdir(dirname(path), { recursive: true });
  await page.screenshot({ path });
}

describeWithBrowser('web UI: dark mode and small screens', () => {
  it("follows the system's scheme, or the one chosen with the toggle (kept); on a 390 px phone the conversation takes the width and the list is a drawer", async () => {
    await using system = await startTestSystem({ gateway: true });
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      for (const id of ['layout-a', 'layout-b']) {
        const created = await system.api('POST', '/conversations', {
          id,
          title: `Layout ${id.slice(-1)}`,
          message: `Check **the layout**, then:\n\n\`\`\`sh\nls -la\n\`\`\`\n\n${taskMessage({ id, steps: 1, effects: system.effects })}`,
          run: true,
        });
        expect(created.status, created.text).toBe(201);
      }
      await system.waitForStatus(
        ['layout-a', 'layout-b'].map((conversation) => ({ tenant: 'acme', conversation })),
        ['finished'],
        60_000,
      );
      // a conversation whose one event is of an earlier day: its time shows with its date
      const old = { tenant: 'acme', conversation: 'layout-old' };
      await system.log.append(
        old,
        [
          draftEvent({ ...old, source: 'user', now: () => new Date('2026-01-02T10:00:00.000Z') }, 'message', {
            role: 'user',
            content: [{ type: 'text', text: 'From an earlier day.' }],
          }),
        ],
        { expected: { streamSeq: 0, lastSeq: 0 } },
      );
      const address = `${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}&c=layout-a`;

      // the system's dark scheme, then the toggle: light, dark, back to the system's; the choice outlives a reload
      const desktop = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
      const problems: string[] = [];
      desktop.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await desktop.goto(address);
      await expect.poll(() => desktop.getByTestId('agent-message').count(), { timeout: 15_000 }).toBeGreaterThan(0);
      // the conversation's tokens (and cost, where its model is priced) in its header
      await expect
        .poll(() => desktop.getByTestId('conversation-usage').textContent())
        .toMatch(/^[1-9][\d,]* tokens( · \$\d+\.\d+)?$/);
      // today's events show their time, an earlier day's their date too
      expect(await desktop.getByTestId('event').first().locator('time').textContent()).not.toMatch(/2026/);
      await desktop.locator('[data-testid="conversation-item"][data-id="layout-old"]').click();
      await expect
        .poll(() => desktop.getByTestId('event').first().locator('time').textContent(), { timeout: 15_000 })
        .toMatch(/Jan 2, 2026/);
      await desktop.locator('[data-testid="conversation-item"][data-id="layout-a"]').click();
      await expect.poll(() => desktop.getByTestId('agent-message').count(), { timeout: 15_000 }).toBeGreaterThan(0);
      // the event search: the gateway's search of the log, a result jumping to its event
      await desktop.getByTestId('event-search-input').fill('the layout');
      await desktop.getByTestId('event-search-input').press('Enter');
      const results = desktop.getByTestId('event-search-result');
      await expect.poll(() => results.count(), { timeout: 15_000 }).toBe(1);
      expect(await desktop.getByTestId('event-search-note').textContent()).toBe('1 event holds “the layout”.');
      const seq = await results.first().getAttribute('data-seq');
      await results.first().click();
      expect(await desktop.locator(`[data-testid="event"][data-seq="${seq}"]`).getAttribute('class')).toContain(
        'found',
      );
      expect(await desktop.locator(`[data-testid="event"][data-seq="${seq}"]`).getAttribute('data-type')).toBe(
        'message',
      );
      await desktop.getByTestId('event-search-input').fill('nothing holds this');
      await desktop.getByTestId('event-search-input').press('Enter');
      await expect
        .poll(() => desktop.getByTestId('event-search-note').textContent())
        .toBe('No event holds “nothing holds this”.');
      expect(await results.count()).toBe(0);
      // Escape empties the search
      await desktop.getByTestId('event-search-input').press('Escape');
      expect(await desktop.getByTestId('event-search-input').inputValue()).toBe('');
      expect(await desktop.getByTestId('event-search-note').isVisible()).toBe(false);
      const toggle = desktop.getByTestId('theme-toggle');
      expect(await toggle.textContent()).toBe('Theme: system');
      expect(await background(desktop)).toBe(DARK);
      await screenshot(desktop, 'web-ui-dark.png');
      await toggle.click();
      expect([await toggle.textContent(), await background(desktop)]).toEqual(['Theme: light', LIGHT]);
      await desktop.reload();
      await expect.poll(() => background(desktop)).toBe(LIGHT);
      await desktop.getByTestId('theme-toggle').click();
      expect([await toggle.textContent(), await background(desktop)]).toEqual(['Theme: dark', DARK]);
      await desktop.emulateMedia({ colorScheme: 'light' });
      expect(await background(desktop)).toBe(DARK);
      await toggle.click();
      expect([await toggle.textContent(), await background(desktop)]).toEqual(['Theme: system', LIGHT]);
      // one model and no template to choose from: the model a new conversation will use is still shown
      expect(await desktop.getByTestId('new-agent').isVisible()).toBe(false);
      expect(await desktop.getByTestId('new-agent-fixed').textContent()).toBe('Model: brain');
      // on a wide screen the list is beside the conversation, and there is no drawer button
      expect(await desktop.getByTestId('conversation-list').isVisible()).toBe(true);
      expect(await desktop.getByTestId('drawer-toggle').isVisible()).toBe(false);

      // the files panel: a text file previewed line by line with its numbers, an image as itself
      await desktop.getByTestId('files-panel').locator('summary').click();
      await desktop
        .getByTestId('files-upload')
        .setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the browser\n') });
      const entry = desktop.locator('[data-testid="file-entry"][data-name="hello.txt"]');
      await expect.poll(() => entry.count(), { timeout: 15_000 }).toBe(1);
      await entry.getByTestId('file-preview-open').click();
      await expect.poll(() => desktop.getByTestId('file-preview').isVisible()).toBe(true);
      expect(await desktop.getByTestId('file-preview-name').textContent()).toBe('hello.txt');
      expect(await desktop.getByTestId('file-preview-text').locator('li').allTextContents()).toEqual([
        'hello from the browser',
      ]);
      const pixel = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
        'base64',
      );
      await desktop
        .getByTestId('files-upload')
        .setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: pixel });
      const image = desktop.locator('[data-testid="file-entry"][data-name="dot.png"]');
      await expect.poll(() => image.count()).toBe(1);
      await image.getByTestId('file-preview-open').click();
      await expect.poll(() => desktop.getByTestId('file-preview-image').count()).toBe(1);
      expect(await desktop.getByTestId('file-preview-image').getAttribute('src')).toBe(
        `data:image/png;base64,${pixel.toString('base64')}`,
      );
      expect(
        await desktop
          .getByTestId('file-preview-image')
          .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
      ).toBe(1);
      await desktop.getByTestId('file-preview-close').click();
      expect(await desktop.getByTestId('file-preview').isVisible()).toBe(false);

      // a phone, 390 px wide: the stream takes the width, nothing scrolls sideways, the list is a drawer
      const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
      phone.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      await phone.goto(address);
      await expect.poll(() => phone.getByTestId('agent-message').count(), { timeout: 15_000 }).toBeGreaterThan(0);
      expect(await phone.getByTestId('conversation-list').isVisible()).toBe(false);
      const stream = await phone.getByTestId('event-list').boundingBox();
      expect(stream!.width).toBeGreaterThanOrEqual(350);
      expect(await phone.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      expect(await phone.getByTestId('message-input').isVisible()).toBe(true);
      expect(await phone.getByTestId('btn-send-run').isVisible()).toBe(true);
      await screenshot(phone, 'web-ui-phone.png');
      // the drawer: opened by its button, closed by opening a conversation there
      const drawerButton = phone.getByTestId('drawer-toggle');
      await drawerButton.click();
      expect(await drawerButton.getAttribute('aria-expanded')).toBe('true');
      const other = phone.locator('[data-testid="conversation-item"][data-id="layout-b"]');
      await expect.poll(() => other.isVisible()).toBe(true);
      await other.click();
      await expect.poll(() => phone.getByTestId('conversation-title').textContent()).toBe('Layout b');
      await expect.poll(() => phone.getByTestId('conversation-list').isVisible()).toBe(false);
      expect(await drawerButton.getAttribute('aria-expanded')).toBe('false');
      // and Escape closes it
      await drawerButton.click();
      await expect.poll(() => phone.getByTestId('conversation-list').isVisible()).toBe(true);
      await phone.keyboard.press('Escape');
      await expect.poll(() => phone.getByTestId('conversation-list').isVisible()).toBe(false);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
