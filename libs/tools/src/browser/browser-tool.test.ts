import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  DEFAULT_SANDBOX_SETTINGS,
  NetworkMode,
  openSandboxProvider,
  unmountWorkspacesUnder,
  type Sandbox,
} from '@flotilla/sandbox';
import { startTestHost, testHostUnavailable, type TestHost } from '@flotilla/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolContext, type ToolContext } from '../core/context.js';
import { resultText, type ToolResult } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import type { BrowserParameters } from './browser-parameters.js';
import { createBrowserTool } from './browser-tool.js';

function onPath(name: string): boolean {
  try {
    execFileSync('which', [name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const hasChromium = existsSync('/usr/lib/chromium/chromium') || onPath('chromium') || onPath('google-chrome');
const hasBwrap = onPath('bwrap');
const missing = !hasBwrap ? 'bwrap (bubblewrap) is not installed' : !hasChromium ? 'no Chromium is installed' : '';
if (missing) console.warn(`browser tool tests SKIPPED: ${missing} (Debian: apt-get install bubblewrap chromium)`);

const PAGE = `<!doctype html>
<html><head><title>Counter</title></head>
<body>
  <h1>Counter page</h1>
  <input placeholder="Your name">
  <button onclick="document.getElementById('out').textContent = 'Hello, ' + document.querySelector('input').value + '!'">Greet</button>
  <a href="data:text/plain,report%20body" download="report.txt">Get the report</a>
  <p id="out"></p>
</body></html>`;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `[ref=…]` id of the first line of the page text naming `label`. */
function refOf(text: string, label: string): string {
  const line = text.split('\n').find((candidate) => candidate.includes(label));
  const ref = line && /\[ref=([a-z0-9]+)\]/.exec(line)?.[1];
  if (!ref) throw new Error(`no element "${label}" in:\n${text}`);
  return ref;
}

describe.skipIf(missing !== '')('the browser tool, with Chromium inside a bwrap sandbox', () => {
  let root: string;
  let workspace: string;
  let sandbox: Sandbox;
  let context: ToolContext;
  const browser = createBrowserTool({ startTimeoutSeconds: 90 });
  const act = (action: BrowserParameters['action']): Promise<ToolResult> => browser.execute({ action }, context);

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-browser-'));
    workspace = path.join(root, 'workspace');
    await mkdir(workspace, { recursive: true });
    const provider = await openSandboxProvider(DEFAULT_SANDBOX_SETTINGS, {
      stateDir: path.join(root, 'state'),
      ownedRoot: root,
      skipSelfTest: true,
    });
    sandbox = await provider.open({ id: 'acme.browser', workspace });
    await sandbox.prepareWorkspace?.();
    await writeFile(path.join(workspace, 'page.html'), PAGE);
    context = createToolContext({ workspace: await openWorkspace(workspace), conversationId: 'acme.browser', sandbox });
  }, 60_000);

  afterAll(async () => {
    await browser.close?.();
    await sandbox?.close();
    // the workspace is a filesystem of its own where the test runs as root: mounts outlive their sandbox
    await unmountWorkspacesUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('opens a workspace page by file://, types and clicks by element id, reads the result, screenshots and downloads', async () => {
    const opened = await act({ type: 'navigate', url: 'file:///workspace/page.html' });
    expect(opened.isError, resultText(opened)).toBe(false);
    const page = resultText(opened);
    expect(page).toContain('URL: file:///workspace/page.html');
    expect(page).toContain('Title: Counter');
    expect(page).toMatch(/button "Greet" \[ref=e\d+\]/);

    const typed = await act({ type: 'type', element: refOf(page, 'textbox "Your name"'), text: 'Ada', submit: false });
    expect(resultText(typed)).toMatch(/textbox "Your name" .*\[ref=e\d+\]: Ada/);
    const clicked = await act({ type: 'click', element: refOf(page, 'button "Greet"') });
    expect(clicked.isError, resultText(clicked)).toBe(false);
    expect(resultText(clicked)).toContain('Hello, Ada!');
    expect(resultText(await act({ type: 'read' }))).toContain('Hello, Ada!');

    const shot = await act({ type: 'screenshot' });
    expect(shot.isError).toBe(false);
    const image = shot.content.find((part) => part.type === 'image');
    expect(image?.mediaType).toBe('image/png');
    expect(
      Buffer.from(image?.type === 'image' ? image.data : '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    const downloaded = await act({ type: 'click', element: refOf(page, 'link "Get the report"') });
    await until(() => existsSync(path.join(workspace, 'downloads', 'report.txt')), 'the download in the workspace');
    expect(await readFile(path.join(workspace, 'downloads', 'report.txt'), 'utf8')).toBe('report body');
    const seen = resultText(downloaded) + resultText(await act({ type: 'read' }));
    expect(seen).toContain('[Downloaded "report.txt" to /workspace/downloads/');
  }, 120_000);

  it('refuses schemes other than http, https, workspace files and about:blank', async () => {
    for (const url of [
      'javascript:alert(1)',
      'data:text/html,<p>hi</p>',
      'chrome://version',
      'file:///etc/passwd',
      'file:///workspace/../etc/passwd',
      'view-source:http://example.com',
      'not a url',
    ]) {
      const refused = await act({ type: 'navigate', url });
      expect(refused.isError, url).toBe(true);
      expect(resultText(refused), url).toMatch(/not allowed|may only open|not an absolute URL/);
    }
    expect(resultText(await act({ type: 'navigate', url: 'about:blank' }))).toContain('URL: about:blank');
    const badArguments = browser.parameters.safeParse({ action: { type: 'click', element: 'button' } });
    expect(badArguments.success).toBe(false);
    const unknownAction = browser.parameters.safeParse({ action: { type: 'evaluate', script: '1' } });
    expect(unknownAction.success).toBe(false);
  }, 60_000);

  it('starts a new browser at the next call when Chromium was killed', async () => {
    await act({ type: 'navigate', url: 'file:///workspace/page.html' });
    const pid = browser.browserPid('acme.browser');
    expect(pid).toBeDefined();
    process.kill(pid!, 'SIGKILL');
    await until(() => !isAlive(pid!), 'the killed browser to go');
    const again = await act({ type: 'navigate', url: 'file:///workspace/page.html' });
    expect(again.isError, resultText(again)).toBe(false);
    expect(resultText(again)).toContain('[The browser had stopped; a new one was started, on an empty page.]');
    expect(resultText(again)).toContain('Title: Counter');
    expect(browser.browserPid('acme.browser')).not.toBe(pid);
  }, 120_000);

  it('stops the Chromium process when the conversation closes', async () => {
    await act({ type: 'read' });
    const pid = browser.browserPid('acme.browser');
    expect(pid !== undefined && isAlive(pid)).toBe(true);
    await browser.closeConversation('acme.browser');
    expect(browser.browserPid('acme.browser')).toBeUndefined();
    await until(() => !isAlive(pid!), 'the closed browser’s process to exit');
  }, 60_000);
});

const noTestHost = missing || testHostUnavailable();
if (!missing && noTestHost) console.warn(`browser egress test SKIPPED: ${noTestHost} to make its own test host`);

/** The test host's page: a form posted back to the host, whose answer only the host's server writes. */
const HOST_SERVER = `require('http').createServer((request, response) => {
  response.setHeader('content-type', 'text/html');
  if (request.url.startsWith('/answer')) return response.end('<title>Answer</title><p>The host says ' + new URL(request.url, 'http://h').searchParams.get('q').split('').reverse().join('') + '</p>');
  response.end('<title>Test host</title><form action="/answer"><input name="q" placeholder="Question"><button>Ask</button></form>');
}).listen(Number(process.env.PORT), process.env.HOST, () => console.log('listening'))`;

describe.skipIf(Boolean(noTestHost))('the browser tool in a sandbox with the egress network mode', () => {
  let root: string;
  let host: TestHost;
  let sandbox: Sandbox;
  let context: ToolContext;
  const browser = createBrowserTool({ startTimeoutSeconds: 90 });
  const act = (action: BrowserParameters['action']): Promise<ToolResult> => browser.execute({ action }, context);

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-browser-egress-'));
    const workspace = path.join(root, 'workspace');
    await mkdir(workspace, { recursive: true });
    host = await startTestHost('browser', HOST_SERVER, 8080);
    const provider = await openSandboxProvider(
      { ...DEFAULT_SANDBOX_SETTINGS, network: NetworkMode.Egress },
      { stateDir: path.join(root, 'state'), ownedRoot: root, skipSelfTest: true },
    );
    sandbox = await provider.open({ id: 'acme.egress', workspace });
    context = createToolContext({ workspace: await openWorkspace(workspace), conversationId: 'acme.egress', sandbox });
  }, 60_000);

  afterAll(async () => {
    await browser.close?.();
    await sandbox?.close();
    host?.stop();
    await unmountWorkspacesUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('opens a page on a host outside the machine’s loopback, fills its form and reads the host’s answer', async () => {
    const opened = await act({ type: 'navigate', url: `http://${host.address}:${host.port}/` });
    expect(opened.isError, resultText(opened)).toBe(false);
    expect(resultText(opened)).toContain('Title: Test host');
    const asked = await act({
      type: 'type',
      element: refOf(resultText(opened), 'textbox "Question"'),
      text: 'olleh',
      submit: true,
    });
    expect(asked.isError, resultText(asked)).toBe(false);
    const answer = resultText(await act({ type: 'read' }));
    expect(answer).toContain('Title: Answer');
    expect(answer).toContain('The host says hello');
  }, 120_000);
});
