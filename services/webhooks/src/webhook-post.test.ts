import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressPolicy } from './address-policy.js';
import { postWebhook } from './webhook-post.js';

type Received = {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
};

let server: Server;
let port: number;
const received: Received[] = [];
/** What the receiver answers, by path. */
const answers: Record<string, (response: ServerResponse) => void> = {
  '/ok': (response) => response.writeHead(204).end(),
  '/fail': (response) => response.writeHead(500).end('boom'),
  '/redirect': (response) => response.writeHead(307, { location: '/ok' }).end(),
  '/slow': () => undefined,
  '/big': (response) => response.writeHead(200).end('x'.repeat(1024 * 1024)),
};

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      received.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      answers[request.url ?? '']?.(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const loopback = AddressPolicy.parse('127.0.0.1/32', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS');
const closed = AddressPolicy.parse('', 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS');
const options = (policy = loopback, timeoutMs = 2_000) => ({
  policy,
  timeoutMs,
  headers: { 'flotilla-event-id': 'evt_1' },
});

describe('a webhook POST', () => {
  it('sends the body as JSON with the headers given; a 2xx is delivered', async () => {
    expect(await postWebhook(`http://127.0.0.1:${port}/ok`, '{"a":1}', options())).toEqual({
      kind: 'delivered',
      status: 204,
    });
    const last = received.at(-1)!;
    expect(last).toMatchObject({ method: 'POST', url: '/ok', body: '{"a":1}' });
    expect(last.headers['content-type']).toBe('application/json');
    expect(last.headers['flotilla-event-id']).toBe('evt_1');
  });

  it('fails on another status, does not follow a redirect, and reads a large answer only in part', async () => {
    expect(await postWebhook(`http://127.0.0.1:${port}/fail`, '{}', options())).toEqual({
      kind: 'failed',
      status: 500,
      error: 'HTTP 500',
    });
    const before = received.length;
    expect(await postWebhook(`http://127.0.0.1:${port}/redirect`, '{}', options())).toEqual({
      kind: 'failed',
      status: 307,
      error: 'HTTP 307',
    });
    expect(received.slice(before).map((request) => request.url)).toEqual(['/redirect']);
    expect(await postWebhook(`http://127.0.0.1:${port}/big`, '{}', options())).toEqual({
      kind: 'delivered',
      status: 200,
    });
  });

  it('gives up after the timeout, and says so', async () => {
    expect(await postWebhook(`http://127.0.0.1:${port}/slow`, '{}', options(loopback, 300))).toEqual({
      kind: 'failed',
      status: null,
      error: 'no answer within 300 ms',
    });
  });

  it('fails when nothing listens', async () => {
    const outcome = await postWebhook('http://127.0.0.1:1/ok', '{}', options());
    expect(outcome).toMatchObject({ kind: 'failed', status: null, error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('refuses loopback, private and metadata addresses unless allowed, by address or by a name that resolves to one, without connecting', async () => {
    const before = received.length;
    for (const url of [
      `http://127.0.0.1:${port}/ok`,
      `http://localhost:${port}/ok`,
      `http://[::1]:${port}/ok`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/hook',
      `http://[::ffff:127.0.0.1]:${port}/ok`,
    ]) {
      const outcome = await postWebhook(url, '{}', options(closed));
      expect(outcome, url).toMatchObject({
        kind: 'refused',
        error: expect.stringMatching(
          /not reached by webhooks; an operator may allow it with FLOTILLA_WEBHOOK_ALLOWED_NETWORKS/,
        ),
      });
    }
    expect(received.length).toBe(before);
    // allowed: a name resolving to an allowed address is reached
    expect(await postWebhook(`http://localhost:${port}/ok`, '{}', options())).toEqual({
      kind: 'delivered',
      status: 204,
    });
  });
});
