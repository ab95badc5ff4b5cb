import { execFileSync } from 'node:child_process';
import { FlotillaClient } from '@flotilla/client';
import type { Event } from '@flotilla/events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { findChromium, MISSING_BROWSER } from '../support/chromium.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

function hasBwrap(): boolean {
  try {
    execFileSync('which', ['bwrap'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const missing =
  findChromium() === undefined ? MISSING_BROWSER : !hasBwrap() ? 'SKIPPED: bwrap (bubblewrap) is not installed' : '';
if (missing) console.warn(`browser tool system test ${missing}`);

/** A page whose button writes a text only its script knows: seen in the log only if the click ran it. */
const PAGE = `<!doctype html>
<html><head><title>Answer page</title></head>
<body>
  <h1>Answer page</h1>
  <button onclick="document.getElementById('out').textContent = ['forty', 'two', 'ok'].join('-')">Show the answer</button>
  <p id="out"></p>
</body></html>`;

type ContentPart = { type: string; text?: string; data?: string };

/** The browser tool in a conversation through every service: Chromium in the conversation's sandbox, driven by the model's calls. */
describe.skipIf(missing !== '')('the browser tool through the services', () => {
  let system: RunningTestSystem;
  let client: FlotillaClient;

  beforeAll(async () => {
    system = await startTestSystem({
      gateway: true,
      recordModelRequests: true,
      gatewayEnv: { FLOTILLA_GATEWAY_WEB_UI: 'false' },
      agent: { tools: ['terminal', 'file_editor', 'browser', 'think', 'finish'] },
    });
    client = new FlotillaClient({ baseUrl: system.gatewayUrl, apiKey: system.apiKey });
  }, 120_000);
  afterAll(async () => {
    await system?.[Symbol.asyncDispose]();
  });

  it('writes a page, serves it from the terminal, opens it in the sandbox’s browser, clicks its button by element id, reads what its script wrote, and the model sees the screenshot', async () => {
    const calls = [
      { tool: 'file_editor', input: { command: 'create', path: '/workspace/page.html', file_text: PAGE } },
      // a server the agent starts in its sandbox: the browser, another process of the same sandbox, reaches it
      {
        tool: 'terminal',
        input: {
          command:
            'cd /workspace && (python3 -m http.server 8000 --bind 127.0.0.1 > /tmp/http.log 2>&1 &) && ' +
            'for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && echo serving && break; sleep 0.1; done',
        },
      },
      { tool: 'browser', input: { action: { type: 'navigate', url: 'http://127.0.0.1:8000/page.html' } } },
      // element ids are numbered in document order: the page (e1), its heading (e2), the button (e3)
      { tool: 'browser', input: { action: { type: 'click', element: 'e3' } } },
      { tool: 'browser', input: { action: { type: 'read' } } },
      // the host's loopback (the gateway itself) is no route out of a sandbox with network none
      { tool: 'browser', input: { action: { type: 'navigate', url: `${system.gatewayUrl}/v1/server-info` } } },
      { tool: 'browser', input: { action: { type: 'navigate', url: 'javascript:alert(1)' } } },
      { tool: 'browser', input: { action: { type: 'screenshot' } } },
    ];
    await client.createConversation({
      id: 'browse',
      message: taskMessage({ id: 'browse', steps: calls.length, effects: system.effects, calls }),
      run: true,
    });
    const ref = { tenant: 'acme', conversation: 'browse' };
    await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 180_000);
    const log: Event[] = await system.events(ref);
    expect(await system.status(ref), JSON.stringify(log.filter((event) => event.type !== 'message'))).toBe('finished');

    const observations = log.filter(
      (event): event is Extract<Event, { type: 'observation' }> =>
        event.type === 'observation' && event.tool_name === 'browser',
    );
    const served = log.find(
      (event): event is Extract<Event, { type: 'observation' }> =>
        event.type === 'observation' && event.tool_name === 'terminal',
    );
    expect(JSON.stringify(served?.content)).toContain('serving');
    expect(observations).toHaveLength(6);
    const textOf = (event: (typeof observations)[number]): string =>
      (event.content as ContentPart[]).map((part) => part.text ?? '').join('\n');
    const [opened, clicked, read, host, scheme, shot] = observations;
    expect(opened!.is_error).toBe(false);
    expect(textOf(opened!)).toContain('Title: Answer page');
    expect(textOf(opened!)).toContain('button "Show the answer" [ref=e3]');
    expect(textOf(opened!)).not.toContain('forty-two-ok');
    expect(clicked!.is_error).toBe(false);
    expect(textOf(clicked!)).toContain('forty-two-ok');
    expect(textOf(read!)).toContain('forty-two-ok');
    expect(host!.is_error).toBe(true);
    expect(textOf(host!)).toMatch(/ERR_CONNECTION_REFUSED|ERR_ADDRESS_UNREACHABLE|ERR_NETWORK_ACCESS_DENIED/);
    expect(scheme!.is_error).toBe(true);
    expect(textOf(scheme!)).toContain('The scheme "javascript:" is not allowed');
    expect(shot!.is_error).toBe(false);
    const image = (shot!.content as ContentPart[]).find((part) => part.type === 'image');
    expect(
      Buffer.from(image?.data ?? '', 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');

    // the step after the screenshot sends it to the model as an image (Chat Completions: in a user message)
    const requests = system.brain.requests.filter((body) => body.includes('\\"id\\":\\"browse\\"'));
    const last = JSON.parse(requests.at(-1)!) as { messages: { role: string; content: unknown }[] };
    const imageParts = last.messages
      .filter((message) => message.role === 'user' && Array.isArray(message.content))
      .flatMap((message) => message.content as { type: string; image_url?: { url: string } }[])
      .filter((part) => part.type === 'image_url');
    expect(imageParts).toHaveLength(1);
    expect(imageParts[0]!.image_url!.url.startsWith('data:image/png;base64,')).toBe(true);
    expect(imageParts[0]!.image_url!.url).toBe(`data:image/png;base64,${image!.data!}`);
  }, 240_000);
});
