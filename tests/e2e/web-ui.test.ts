import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretsKey } from '@flotilla/secrets';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER, screenshotPath } from '../support/chromium.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const SCREENSHOT = screenshotPath('web-ui.png');

const executablePath = findChromium();
if (!executablePath) console.warn(`web UI test ${MISSING_BROWSER}`);
const describeWithBrowser = executablePath ? describe : describe.skip;

/** Poll with room for a run's real latency (the default second is too short for it). */
const poll = <T>(read: () => Promise<T>, timeout = 15_000) => expect.poll(read, { timeout, interval: 50 });

/** The UI's error banner, when it shows one (so a failed poll says why). */
async function bannerText(page: Page): Promise<string | false> {
  const banner = page.getByTestId('error-banner');
  return (await banner.isVisible()) ? `error banner: ${await banner.textContent()}` : false;
}

/** The operator's agents the picker offers: a template, and a spare model profile (never called: its conversation is not run). */
const CATALOG = {
  profiles: {
    spare: { provider: 'openai-chat', model: 'spare-model', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'spare-key' },
  },
  templates: { reviewer: { tools: ['terminal', 'finish'], confirmation: { mode: 'never' } } },
};

describeWithBrowser(
  executablePath ? 'web UI in headless Chromium' : `web UI in headless Chromium — ${MISSING_BROWSER}`,
  () => {
    let system: RunningTestSystem;
    let browser: Browser;

    beforeAll(async () => {
      const [started, launched] = await Promise.allSettled([
        // every action needs the user's approval, so the run stops until the UI approves it
        startTestSystem({
          gateway: true,
          agent: { confirmation: { mode: 'always' } },
          catalog: CATALOG,
          gatewayEnv: { FLOTILLA_SECRETS_KEY: generateSecretsKey() },
        }),
        chromium.launch({ executablePath, args: ['--no-sandbox'] }),
      ]);
      // keep whichever started, so afterAll stops it even when the other failed
      if (started.status === 'fulfilled') system = started.value;
      if (launched.status === 'fulfilled') browser = launched.value;
      if (started.status === 'rejected') throw started.reason;
      if (launched.status === 'rejected')
        throw new Error(`Chromium at ${executablePath} did not start`, { cause: launched.reason });
    }, 90_000);

    afterAll(async () => {
      try {
        await browser?.close();
      } finally {
        await system?.[Symbol.asyncDispose]();
      }
    });

    /** A page that fails the test on any script error or console error. */
    async function openPage(fragment: string): Promise<{ page: Page; problems: string[] }> {
      const page = await browser.newPage({ viewport: { width: 1360, height: 1000 }, deviceScaleFactor: 1 });
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
      });
      await page.goto(`${system.gatewayUrl}/${fragment}`);
      return { page, problems };
    }

    it('asks for an API key, refuses a wrong one, and keeps a good one out of the address bar', async () => {
      const { page } = await openPage('');
      await poll(() => page.getByTestId('key-form').isVisible()).toBe(true);
      await page.getByTestId('key-input').fill('not-a-real-key');
      await page.getByTestId('key-submit').click();
      await poll(() => page.getByTestId('key-error').textContent()).toContain('refused');

      await page.getByTestId('key-input').fill(system.apiKey);
      await page.getByTestId('key-submit').click();
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      expect(await page.evaluate("localStorage.getItem('flotilla.apiKey')")).toBe(system.apiKey);

      // a key in the fragment is adopted and removed from the address
      await page.getByTestId('forget-key').click();
      await poll(() => page.getByTestId('key-form').isVisible()).toBe(true);
      await page.goto(`${system.gatewayUrl}/#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      expect(new URL(page.url()).hash).not.toContain('key=');
      await page.close();
    }, 30_000);

    it('streams token deltas into the typing area until the durable reply replaces them', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.getByTestId('new-title').fill('Stream a reply');
      // no tool call (steps 0): the reply streams in 20 chunks, 100 ms apart
      await page
        .getByTestId('new-message')
        .fill(taskMessage({ id: 'stream', steps: 0, effects: system.effects, chunks: 20, chunkDelayMs: 100 }));
      await page.getByTestId('new-create-run').click();

      const typing = page.getByTestId('typing');
      await poll(async () => (await typing.isVisible()) || (await bannerText(page))).toBe(true);
      expect(await typing.textContent()).toMatch(/\.+/);
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status'), 30_000).toBe('finished');
      expect(await page.getByTestId('agent-message').last().textContent()).toContain('Done: 0 steps for stream.');
      expect(await typing.isHidden()).toBe(true);
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it('creates a conversation, streams its events, approves the pending action and reaches finished', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);

      await page.getByTestId('new-title').fill('List the workspace');
      await page.getByTestId('new-message').fill(taskMessage({ id: 'ui', steps: 1, effects: system.effects }));
      await page.getByTestId('new-create-run').click();

      const view = page.getByTestId('conversation-view');
      await poll(async () => (await view.isVisible()) || (await bannerText(page))).toBe(true);
      const id = await view.getAttribute('data-id');
      expect(id).toBeTruthy();
      await poll(() => page.getByTestId('user-message').first().textContent()).toContain('TASK');

      // the agent proposes a terminal command and waits for approval
      const panel = page.getByTestId('confirmation-panel');
      await poll(async () => (await panel.isVisible()) || (await bannerText(page)), 30_000).toBe(true);
      expect(await page.getByTestId('conversation-status').getAttribute('data-status')).toBe(
        'waiting_for_confirmation',
      );
      const pending = panel.getByTestId('pending-action');
      expect(await pending.count()).toBe(1);
      expect(await pending.getByTestId('tool-name').textContent()).toBe('terminal');
      expect(await pending.getByTestId('tool-command').textContent()).toContain('echo "ui 0 0"');
      expect(await page.getByTestId('btn-run').isDisabled()).toBe(true);
      // nothing ran before the approval
      expect(await system.readEffects()).toEqual([]);

      await page.getByTestId('btn-approve').click();
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status'), 30_000).toBe('finished');
      await poll(() => panel.isHidden()).toBe(true);

      // the stream shows the approval, the command's result and the agent's answer
      const events = page.getByTestId('event-list');
      expect(await events.locator('[data-type="approval"]').count()).toBe(1);
      const result = events.getByTestId('tool-result');
      await poll(() => result.count()).toBe(1);
      expect(await result.getByTestId('exit-code').textContent()).toBe('exit 0');
      expect(await result.getAttribute('data-error')).toBe('false');
      await poll(() => events.getByTestId('agent-message').last().textContent()).toContain('Done: 1 steps for ui.');
      expect(await page.getByTestId('typing').isHidden()).toBe(true);
      // the list shows the conversation, finished
      const item = page.locator(`[data-testid="conversation-item"][data-id="${id}"]`);
      await poll(() => item.getAttribute('data-status')).toBe('finished');
      expect(await item.textContent()).toContain('List the workspace');

      // the log agrees: finished, and the command ran exactly once
      expect(await system.status({ tenant: 'acme', conversation: id! })).toBe('finished');
      expect(await system.readEffects()).toEqual(['ui 0 0']);

      await mkdir(dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT });

      // a follow-up message from the composer starts another run
      await page.getByTestId('message-input').fill('Thanks. Check once more, please.');
      await page.getByTestId('btn-send-run').click();
      await poll(() => events.getByTestId('user-message').count()).toBe(2);
      await poll(() => events.getByTestId('agent-message').count(), 30_000).toBe(2);
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status')).toBe('finished');
      expect(await page.getByTestId('message-input').inputValue()).toBe('');
      expect(problems).toEqual([]);
      await page.close();
    }, 90_000);

    it('attaches an image to a message: shown as a chip until sent, stored by the gateway, shown by name in the conversation', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.getByTestId('new-message').fill('A first message, no run.');
      await page.getByTestId('new-create').click();
      const events = page.getByTestId('event-list');
      await poll(() => events.getByTestId('user-message').count()).toBe(1);

      const png = Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        Buffer.alloc(3_000, 7),
      ]);
      await page.getByTestId('image-input').setInputFiles({ name: 'layout.png', mimeType: 'image/png', buffer: png });
      // the chip shows once the page has read the file (asynchronously)
      await poll(() => page.getByTestId('attachment').textContent()).toContain('layout.png');
      await page.getByTestId('message-input').fill('Why is the header misaligned?');
      await page.getByTestId('btn-send').click();
      await poll(() => events.getByTestId('user-message').count()).toBe(2);
      await poll(() => events.getByTestId('image-ref').textContent()).toBe('image layout.png (3 KiB)');
      await poll(() => page.getByTestId('attachment').count()).toBe(0);

      // the log names the image with its size and digest; the bytes are the file's
      const id = (await page.getByTestId('conversation-view').getAttribute('data-id')) ?? '';
      const stored = (await system.events({ tenant: 'acme', conversation: id })).findLast(
        (event) => event.type === 'message',
      );
      expect(stored).toMatchObject({
        v: 4,
        content: [
          { type: 'text', text: 'Why is the header misaligned?' },
          { type: 'image', name: 'layout.png', bytes: png.length, media_type: 'image/png' },
        ],
      });
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it('rejects a pending action with a reason: the agent is told and the conversation goes idle', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.getByTestId('new-message').fill(taskMessage({ id: 'refuse', steps: 1, effects: system.effects }));
      await page.getByTestId('new-create-run').click();
      const panel = page.getByTestId('confirmation-panel');
      await poll(async () => (await panel.isVisible()) || (await bannerText(page)), 30_000).toBe(true);

      await page.getByTestId('reject-reason').fill('Do not touch that file.');
      await page.getByTestId('btn-reject').click();
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status')).toBe('idle');
      expect(await panel.isHidden()).toBe(true);
      const rejection = page.locator('[data-testid="event"][data-type="user_rejection"]');
      expect(await rejection.textContent()).toContain('Do not touch that file.');
      const effects = (await system.readEffects()).join('\n');
      expect(effects).not.toContain('refuse');
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it('interrupts a streaming reply, and Run resumes the conversation to finished', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      // a reply that streams for 5 s (no tool call, so no confirmation)
      await page
        .getByTestId('new-message')
        .fill(taskMessage({ id: 'halt', steps: 0, effects: system.effects, chunks: 50, chunkDelayMs: 100 }));
      await page.getByTestId('new-create-run').click();
      await poll(async () => (await page.getByTestId('typing').isVisible()) || (await bannerText(page))).toBe(true);
      expect(await page.getByTestId('btn-pause').isEnabled()).toBe(true);

      await page.getByTestId('btn-interrupt').click();
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status')).toBe('paused');
      expect(await page.locator('[data-testid="event"][data-type="interrupt"]').count()).toBe(1);
      expect(await page.getByTestId('typing').isHidden()).toBe(true);
      expect(await page.getByTestId('agent-message').count()).toBe(0);
      expect(await page.getByTestId('btn-interrupt').isDisabled()).toBe(true);

      await page.getByTestId('btn-run').click();
      await poll(() => page.getByTestId('conversation-status').getAttribute('data-status'), 30_000).toBe('finished');
      expect(await page.getByTestId('agent-message').last().textContent()).toContain('Done: 0 steps for halt.');
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);
    it('sets and removes a conversation’s secret by name, and never shows its value', async () => {
      const id = 'ui-secrets';
      await (
        await fetch(`${system.gatewayUrl}/v1/conversations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${system.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id, title: 'Secrets' }),
        })
      ).arrayBuffer();
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.locator(`[data-testid="conversation-item"][data-id="${id}"]`).click();
      await poll(() => page.getByTestId('conversation-view').getAttribute('data-id')).toBe(id);
      await page.getByTestId('secrets-panel').locator('summary').click();
      const value = 'ghp_ui-secret-value-1234';
      await page.getByTestId('secret-name').fill('GITHUB_TOKEN');
      await page.getByTestId('secret-value').fill(value);
      await page.getByTestId('secret-set').click();
      const listed = page.locator('[data-testid="secret"][data-name="GITHUB_TOKEN"]');
      await poll(async () => (await listed.count()) || (await bannerText(page))).toBe(1);
      expect(await page.getByTestId('secret-value').inputValue()).toBe('');
      expect(await page.content()).not.toContain(value);
      const names = await (
        await fetch(`${system.gatewayUrl}/v1/conversations/${id}/secrets`, {
          headers: { authorization: `Bearer ${system.apiKey}` },
        })
      ).json();
      expect(names).toEqual({ names: ['GITHUB_TOKEN'] });
      await listed.getByTestId('secret-remove').click();
      await poll(() => listed.count()).toBe(0);
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it("lists the tenant's schedules, creates one with a cron in a time zone, pauses, resumes and deletes it, and one that messages a conversation", async () => {
      const headers = { authorization: `Bearer ${system.apiKey}`, 'content-type': 'application/json' };
      const made = await fetch(`${system.gatewayUrl}/v1/schedules`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          when: { every: '2h' },
          action: { type: 'create_conversation', message: 'made over REST' },
        }),
      });
      const existing = ((await made.json()) as { id: string }).id;
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.getByTestId('schedules-panel').locator('summary').click();
      const rest = page.locator(`[data-testid="schedule"][data-id="${existing}"]`);
      await poll(async () => (await rest.count()) || (await bannerText(page))).toBe(1);
      expect(await rest.textContent()).toContain('every 2h');

      await page.getByTestId('schedule-kind').selectOption('cron');
      await page.getByTestId('schedule-value').fill('0 30 9 * * MON-FRI');
      await page.getByTestId('schedule-zone').fill('Europe/Paris');
      await page.getByTestId('schedule-message').fill('morning digest');
      await page.getByTestId('schedule-missed').selectOption('skip');
      await page.getByTestId('schedule-create').click();
      const created = page.locator('[data-testid="schedule"]', { hasText: 'morning digest' });
      await poll(async () => (await created.count()) || (await bannerText(page))).toBe(1);
      expect(await created.textContent()).toContain('cron 0 30 9 * * MON-FRI (Europe/Paris)');
      const id = (await created.getAttribute('data-id'))!;
      const stored = (await (await fetch(`${system.gatewayUrl}/v1/schedules/${id}`, { headers })).json()) as {
        when: unknown;
        missed_runs: string;
        status: string;
      };
      expect(stored).toMatchObject({
        when: { cron: '0 30 9 * * MON-FRI', time_zone: 'Europe/Paris' },
        missed_runs: 'skip',
        status: 'active',
      });

      await created.getByTestId('schedule-pause').click();
      await poll(() => created.getAttribute('data-status')).toBe('paused');
      await created.getByTestId('schedule-resume').click();
      await poll(() => created.getAttribute('data-status')).toBe('active');
      await created.getByTestId('schedule-delete').click();
      await poll(() => created.count()).toBe(0);
      expect((await fetch(`${system.gatewayUrl}/v1/schedules/${id}`, { headers })).status).toBe(404);

      // a message to a conversation, every two hours
      const target = 'ui-scheduled-target';
      await (
        await fetch(`${system.gatewayUrl}/v1/conversations`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ id: target, title: 'Scheduled target' }),
        })
      ).arrayBuffer();
      await page.getByTestId('schedule-kind').selectOption('every');
      await page.getByTestId('schedule-value').fill('2h');
      await page.getByTestId('schedule-message').fill('any news?');
      await page.getByTestId('schedule-to').fill(target);
      await page.getByTestId('schedule-create').click();
      const messaging = page.locator('[data-testid="schedule"]', { hasText: 'any news?' });
      await poll(async () => (await messaging.count()) || (await bannerText(page))).toBe(1);
      expect(await messaging.textContent()).toContain(`message to ${target}: any news?`);
      await messaging.getByTestId('schedule-delete').click();
      await poll(() => messaging.count()).toBe(0);
      await fetch(`${system.gatewayUrl}/v1/schedules/${existing}`, {
        method: 'DELETE',
        headers: { authorization: headers.authorization },
      });
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it('browses the workspace, uploads and downloads a file, and shows the git diff', async () => {
      const id = 'ui-files';
      const headers = { authorization: `Bearer ${system.apiKey}` };
      await (
        await fetch(`${system.gatewayUrl}/v1/conversations`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ id, title: 'Files' }),
        })
      ).arrayBuffer();
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('conversation-list').isVisible()).toBe(true);
      await page.locator(`[data-testid="conversation-item"][data-id="${id}"]`).click();
      await poll(() => page.getByTestId('conversation-view').getAttribute('data-id')).toBe(id);
      await page.getByTestId('files-panel').locator('summary').click();
      await poll(async () => (await page.getByTestId('files-note').textContent()) || (await bannerText(page))).toBe(
        'This folder is empty.',
      );

      // an upload from this computer lands in the folder shown, byte for byte
      await page
        .getByTestId('files-upload')
        .setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello from the browser\n') });
      const entry = page.locator('[data-testid="file-entry"][data-name="hello.txt"]');
      await poll(async () => (await entry.count()) || (await bannerText(page))).toBe(1);
      const stored = await fetch(`${system.gatewayUrl}/v1/conversations/${id}/files/content?path=hello.txt`, {
        headers,
      });
      expect(await stored.text()).toBe('hello from the browser\n');
      const [download] = await Promise.all([page.waitForEvent('download'), entry.getByTestId('file-download').click()]);
      expect(download.suggestedFilename()).toBe('hello.txt');
      expect(await readFile((await download.path())!, 'utf8')).toBe('hello from the browser\n');

      // a repository in it (made here as the agent would make one): its diff, line by line
      const workspace = join(system.home, 'workspaces', 'acme', id);
      const git = (...args: string[]) =>
        execFileSync('git', [
          '-C',
          workspace,
          '-c',
          'safe.directory=*',
          '-c',
          'user.email=ui@example.com',
          '-c',
          'user.name=ui',
          ...args,
        ]);
      git('init', '-q', '-b', 'main');
      git('add', 'hello.txt');
      git('commit', '-qm', 'first');
      await writeFile(join(workspace, 'hello.txt'), 'hello, changed\n');
      await page.getByTestId('files-diff').click();
      await poll(async () => (await page.getByTestId('diff-view').isVisible()) || (await bannerText(page))).toBe(true);
      expect(await page.getByTestId('diff-summary').textContent()).toBe('/workspace on main: 1 changed');
      expect(await page.locator('[data-testid="git-status-entry"]').allTextContents()).toEqual(['.Mhello.txt']);
      expect(await page.locator('#diff-text .diff-add').allTextContents()).toEqual(['+hello, changed\n']);
      expect(await page.locator('#diff-text .diff-del').allTextContents()).toEqual(['-hello from the browser\n']);
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);

    it('creates a conversation from a template and a model profile picked in the form, and shows its agent spec as it changes', async () => {
      const { page, problems } = await openPage(`#key=${encodeURIComponent(system.apiKey)}`);
      await poll(() => page.getByTestId('new-agent').isVisible()).toBe(true);
      expect(await page.getByTestId('new-agent-fixed').isVisible()).toBe(false);
      const options = async (testId: string) =>
        page
          .getByTestId(testId)
          .locator('option')
          .evaluateAll((nodes) => nodes.map((node) => node.getAttribute('value')));
      expect(await options('new-template')).toEqual(['', 'reviewer']);
      expect(await options('new-profile')).toEqual(['', 'default', 'spare']);
      await page.getByTestId('new-title').fill('From a template');
      await page.getByTestId('new-template').selectOption('reviewer');
      await page.getByTestId('new-profile').selectOption('spare');
      await page.getByTestId('new-create').click();

      const pane = page.getByTestId('conversation-view');
      await poll(
        async () => (await page.getByTestId('conversation-title').textContent()) || (await bannerText(page)),
      ).toBe('From a template');
      const id = (await pane.getAttribute('data-id'))!;
      await poll(() => page.getByTestId('spec-summary').textContent()).toBe('spare-model · reviewer');
      await page.getByTestId('spec-panel').locator('summary').click();
      expect(await page.getByTestId('spec-model').textContent()).toBe('openai-chat spare-model (profile spare)');
      expect(await page.getByTestId('spec-tools').textContent()).toBe('terminal, finish');
      expect(await page.getByTestId('spec-template').textContent()).toBe('reviewer');
      expect(await page.getByTestId('spec-confirmation').textContent()).toBe('never');
      // what the gateway made of the choice
      const headers = { authorization: `Bearer ${system.apiKey}`, 'content-type': 'application/json' };
      const made = (await (await fetch(`${system.gatewayUrl}/v1/conversations/${id}/spec`, { headers })).json()) as {
        template: string;
        spec: { llm: { profile: string } };
      };
      expect(made).toMatchObject({ template: 'reviewer', spec: { llm: { profile: 'spare' } } });

      // a change made elsewhere (here the REST API) shows as it lands in the log
      const switched = await fetch(`${system.gatewayUrl}/v1/conversations/${id}/spec`, {
        method: 'PATCH',
        headers,
        body: JSON.stringify({ spec: { llm: { profile: 'default' } }, reason: 'back to the default model' }),
      });
      expect(switched.status).toBe(200);
      await poll(() => page.getByTestId('spec-model').textContent()).toBe('openai-chat brain (profile default)');
      expect(await page.getByTestId('spec-set').textContent()).toMatch(/^at #\d+: back to the default model$/);
      expect(problems).toEqual([]);
      await page.close();
    }, 60_000);
  },
);
