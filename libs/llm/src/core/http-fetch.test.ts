import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpFetch } from './http-fetch.js';

type Route = (request: IncomingMessage, body: string, response: ServerResponse) => void;

const routes = new Map<string, Route>([
  [
    '/echo',
    (request, body, response) => {
      response.setHeader('content-type', 'application/json');
      response.setHeader('set-cookie', ['a=1', 'b=2']);
      response.end(JSON.stringify({ method: request.method, body, headers: request.headers }));
    },
  ],
  [
    '/events',
    (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      let sent = 0;
      const timer = setInterval(() => {
        sent += 1;
        response.write(`data: ${sent}\n\n`);
        if (sent === 3) {
          clearInterval(timer);
          response.end();
        }
      }, 5);
    },
  ],
  [
    '/slow',
    (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('data: first\n\n');
      // never ends on its own; the client aborts
    },
  ],
  ['/hang', () => undefined],
  [
    '/cut',
    (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
      response.write('only part');
      setTimeout(() => response.socket?.destroy(), 10);
    },
  ],
  [
    '/gzip',
    (_request, _body, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      response.end(gzipSync(JSON.stringify({ hello: 'compressed' })));
    },
  ],
  [
    '/empty',
    (_request, _body, response) => {
      response.writeHead(204);
      response.end();
    },
  ],
  [
    '/moved',
    (_request, _body, response) => {
      response.writeHead(307, { location: '/echo' });
      response.end();
    },
  ],
  [
    '/see-other',
    (_request, _body, response) => {
      response.writeHead(303, { location: '/echo' });
      response.end();
    },
  ],
  [
    '/odd-status',
    (_request, _body, response) => {
      response.writeHead(600);
      response.end('beyond what fetch represents');
    },
  ],
  [
    '/elsewhere',
    (_request, _body, response) => {
      response.writeHead(307, { location: `http://127.0.0.1:${otherPort}/echo` });
      response.end();
    },
  ],
  [
    '/error',
    (_request, _body, response) => {
      response.writeHead(429, 'Too Many Requests', { 'content-type': 'application/json', 'retry-after': '2' });
      response.end('{"error":{"message":"slow down"}}');
    },
  ],
]);

let server: Server;
let other: Server;
let base: string;
let otherPort = '';

function routed(): Server {
  return createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const route = routes.get(new URL(request.url ?? '/', 'http://x').pathname);
      if (route) route(request, Buffer.concat(chunks).toString(), response);
      else response.writeHead(404).end();
    });
  });
}

beforeAll(async () => {
  // two servers: two origins, for redirects that leave one
  server = routed();
  other = routed();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  otherPort = String((other.address() as AddressInfo).port);
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const each of [server, other]) {
    each.closeAllConnections();
    await new Promise((resolve) => each.close(resolve));
  }
});

async function readAll(body: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of body) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

describe('httpFetch', () => {
  it('sends the method, headers and a string body, and returns status, headers and url', async () => {
    const response = await httpFetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
      body: '{"a":"é"}',
    });
    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.url).toBe(`${base}/echo`);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    const echoed = (await response.json()) as { method: string; body: string; headers: Record<string, string> };
    expect(echoed.method).toBe('POST');
    expect(echoed.body).toBe('{"a":"é"}');
    expect(echoed.headers['x-api-key']).toBe('k');
    expect(echoed.headers['content-length']).toBe(String(Buffer.byteLength('{"a":"é"}')));
  });

  it('sends byte bodies as they are', async () => {
    const response = await httpFetch(new URL(`${base}/echo`), {
      method: 'PUT',
      body: new TextEncoder().encode('bytes'),
    });
    expect(((await response.json()) as { body: string }).body).toBe('bytes');
  });

  it('streams the body as the server sends it', async () => {
    const response = await httpFetch(`${base}/events`);
    const seen: string[] = [];
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) seen.push(decoder.decode(chunk));
    expect(seen.join('')).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    expect(seen.length).toBeGreaterThan(1);
  });

  it('rejects with the signal reason when aborted before the response', async () => {
    const controller = new AbortController();
    const pending = httpFetch(`${base}/hang`, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop now')), 20);
    await expect(pending).rejects.toThrow('stop now');
    const aborted = AbortSignal.abort();
    await expect(httpFetch(`${base}/echo`, { signal: aborted })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('errors the body with the signal reason when aborted while streaming', async () => {
    const controller = new AbortController();
    const response = await httpFetch(`${base}/slow`, { signal: controller.signal });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    const next = reader.read();
    controller.abort();
    await expect(next).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('errors a body the connection cut short instead of ending it', async () => {
    const response = await httpFetch(`${base}/cut`);
    await expect(readAll(response.body!)).rejects.toThrow('terminated');
  });

  it('rejects a refused connection with TypeError("fetch failed") and the cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const error = (await httpFetch(`http://127.0.0.1:${port}/`).catch((caught: unknown) => caught)) as TypeError & {
      cause: { code: string };
    };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('fetch failed');
    expect(error.cause.code).toBe('ECONNREFUSED');
  });

  it('decodes a compressed body', async () => {
    expect(await (await httpFetch(`${base}/gzip`)).json()).toEqual({ hello: 'compressed' });
  });

  it('gives a null body for 204', async () => {
    const response = await httpFetch(`${base}/empty`, { method: 'DELETE' });
    expect(response.status).toBe(204);
    expect(response.body).toBeNull();
  });

  it('follows redirects: 307 keeps the method and body, 303 becomes GET', async () => {
    const kept = (await (await httpFetch(`${base}/moved`, { method: 'POST', body: 'again' })).json()) as {
      method: string;
      body: string;
    };
    expect(kept).toMatchObject({ method: 'POST', body: 'again' });
    const changed = await httpFetch(`${base}/see-other`, {
      method: 'POST',
      body: 'dropped',
      headers: { 'content-type': 'text/plain' },
    });
    expect(changed.url).toBe(`${base}/echo`);
    expect(await changed.json()).toMatchObject({ method: 'GET', body: '' });
    const manual = await httpFetch(`${base}/moved`, { redirect: 'manual' });
    expect(manual.status).toBe(307);
  });

  it('does not carry credentials to another origin on a redirect', async () => {
    const response = await httpFetch(`${base}/elsewhere`, {
      method: 'POST',
      body: 'x',
      headers: { authorization: 'Bearer k', 'x-api-key': 'k', 'x-other': 'kept' },
    });
    expect(response.url).toBe(`http://127.0.0.1:${otherPort}/echo`);
    const echoed = (await response.json()) as { headers: Record<string, string>; body: string };
    expect(echoed.headers['authorization']).toBeUndefined();
    expect(echoed.headers['x-api-key']).toBeUndefined();
    expect(echoed.headers['x-other']).toBe('kept');
    expect(echoed.body).toBe('x');
  });

  it('rejects a response fetch cannot represent instead of throwing in an event handler', async () => {
    const error = (await httpFetch(`${base}/odd-status`).catch((caught: unknown) => caught)) as TypeError & {
      cause: Error;
    };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe('fetch failed');
    expect(error.cause).toBeInstanceOf(RangeError);
  });

  it('returns error statuses as responses, with their text and headers', async () => {
    const response = await httpFetch(`${base}/error`);
    expect(response.status).toBe(429);
    expect(response.statusText).toBe('Too Many Requests');
    expect(response.headers.get('retry-after')).toBe('2');
    expect(await response.text()).toBe('{"error":{"message":"slow down"}}');
  });

  it('reuses connections for sequential requests', async () => {
    const sockets = new Set<unknown>();
    const listener = (request: IncomingMessage): void => {
      sockets.add(request.socket);
    };
    server.on('request', listener);
    try {
      for (let index = 0; index < 10; index += 1)
        await (await httpFetch(`${base}/echo`, { method: 'POST', body: String(index) })).text();
    } finally {
      server.off('request', listener);
    }
    // undici's pool may open a second connection when a request follows the previous answer's end at once
    expect(sockets.size).toBeLessThanOrEqual(2);
  });
});
