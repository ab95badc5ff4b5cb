import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLanguageModel } from '../create-language-model.js';
import {
  firstTurn,
  fixtureReply,
  loadFixture,
  startTestServer,
  type LlmTestServer,
  type TestProvider,
} from '../testing/index.js';
import { createHttpFetch, proxySettings } from './http-fetch.js';

const FIXTURES = {
  'openai-chat': 'openai-chat-tool-call',
  'openai-responses': 'openai-responses-tool-call',
  anthropic: 'anthropic-tool-call',
} as const;
const PROVIDERS = Object.keys(FIXTURES) as TestProvider[];
const fixtureDir = new URL('../testing/fixtures/', import.meta.url);
const ca = readFileSync(new URL('tls-localhost.cert.pem', fixtureDir));

/**
 * A forward proxy as a network's egress proxy is: CONNECT opens a tunnel to host:port (https), a
 * request with an absolute URI is forwarded (plain http). It records both.
 */
type Proxy = { readonly url: string; readonly tunnels: string[]; readonly forwarded: string[]; close(): Promise<void> };

async function startProxy(): Promise<Proxy> {
  const tunnels: string[] = [];
  const forwarded: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((incoming, outgoing) => {
    forwarded.push(`${incoming.method} ${incoming.url}`);
    const target = new URL(incoming.url ?? '');
    const upstream = httpRequest(target, { method: incoming.method, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('connect', (incoming, client: Socket, head: Buffer) => {
    tunnels.push(incoming.url ?? '');
    const [host, port] = (incoming.url ?? '').split(':');
    const upstream = connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    forwarded,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let model: LlmTestServer;
let tls: TlsServer;
let httpsBase: string;
let proxy: Proxy;
const saved = new Map<string, string | undefined>();
const PROXY_VARIABLES = ['HTTPS_PROXY', 'HTTP_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'no_proxy'];

beforeAll(async () => {
  model = await startTestServer();
  // the model server over https: TLS ended here, the bytes passed on to the test server
  const modelPort = Number(new URL(model.url).port);
  tls = createTlsServer({ key: readFileSync(new URL('tls-localhost.key.pem', fixtureDir)), cert: ca }, (socket) => {
    const upstream = connect(modelPort, '127.0.0.1');
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
  httpsBase = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
  proxy = await startProxy();
  for (const name of PROXY_VARIABLES) saved.set(name, process.env[name]);
});

afterEach(() => {
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

afterAll(async () => {
  await proxy.close();
  await new Promise((resolve) => tls.close(resolve));
  await model.close();
});

function modelFor(
  provider: TestProvider,
  baseURL: string,
  options: { fetch?: typeof fetch; env?: Record<string, string> } = {},
) {
  return createLanguageModel(
    {
      provider,
      model: 'm',
      apiKey: `key-${provider}`,
      baseURL: provider === 'anthropic' ? baseURL : `${baseURL}/v1`,
      retry: { maxAttempts: 1 },
      timeoutMs: 10_000,
    },
    options,
  );
}

async function callOnce(
  provider: TestProvider,
  baseURL: string,
  options: { fetch?: typeof fetch; env?: Record<string, string> } = {},
): Promise<void> {
  model.enqueue(fixtureReply(loadFixture(FIXTURES[provider])));
  const before = model.requests.length;
  const result = await modelFor(provider, baseURL, options).generate({ messages: firstTurn }, {});
  expect(result.content.length + result.toolCalls.length).toBeGreaterThan(0);
  expect(model.requests.length).toBe(before + 1);
  const headers = model.requests.at(-1)!.headers;
  // the key reached the model server (the Anthropic SDK sends it as x-api-key or a bearer token)
  expect(String(headers['x-api-key'] ?? headers['authorization'])).toContain(`key-${provider}`);
}

describe('model requests through a proxy', () => {
  it.each(PROVIDERS)(
    '%s: reaches an https model server through the HTTPS_PROXY tunnel, tunnels kept alive across calls',
    async (provider) => {
      const transport = createHttpFetch({ proxy: proxySettings({ HTTPS_PROXY: proxy.url }), ca });
      const tunnelsBefore = proxy.tunnels.length;
      for (let call = 0; call < 6; call += 1) await callOnce(provider, httpsBase, { fetch: transport });
      const tunnels = proxy.tunnels.slice(tunnelsBefore);
      // undici may open a second connection when a call follows the previous answer's end at once
      expect(tunnels.length).toBeGreaterThanOrEqual(1);
      expect(tunnels.length).toBeLessThanOrEqual(2);
      expect(new Set(tunnels)).toEqual(new Set([new URL(httpsBase).host]));
    },
  );

  it.each(PROVIDERS)('%s: goes direct to a host NO_PROXY names', async (provider) => {
    const transport = createHttpFetch({
      proxy: proxySettings({ HTTPS_PROXY: proxy.url, NO_PROXY: 'models.internal, 127.0.0.1' }),
      ca,
    });
    const tunnelsBefore = proxy.tunnels.length;
    await callOnce(provider, httpsBase, { fetch: transport });
    expect(proxy.tunnels.length).toBe(tunnelsBefore);
  });

  it('without a proxy setting, an https request fails on a certificate Node does not trust: the test server is not reached by accident', async () => {
    const transport = createHttpFetch({ proxy: {} });
    const error = (await transport(`${httpsBase}/v1/models`).catch((caught: unknown) => caught)) as TypeError & {
      cause: { code?: string };
    };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.cause.code).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|CERT/);
  });

  it.each(PROVIDERS)(
    '%s: the clients read HTTP_PROXY from the process environment when made, a conversation model too, and send plain http to the proxy with the absolute URI',
    async (provider) => {
      process.env['HTTP_PROXY'] = proxy.url;
      delete process.env['http_proxy'];
      delete process.env['NO_PROXY'];
      delete process.env['no_proxy'];
      const forwardedBefore = proxy.forwarded.length;
      // env: {} as a conversation's own model has: its key is explicit, the proxy still the deployment's
      await callOnce(provider, model.url, { env: {} });
      const path =
        provider === 'anthropic'
          ? '/v1/messages'
          : provider === 'openai-chat'
            ? '/v1/chat/completions'
            : '/v1/responses';
      expect(proxy.forwarded.slice(forwardedBefore)).toEqual([`POST ${model.url}${path}`]);

      process.env['NO_PROXY'] = '127.0.0.1';
      await callOnce(provider, model.url);
      expect(proxy.forwarded.length).toBe(forwardedBefore + 1);
    },
  );

  it('refuses a proxy variable that is not a URL, naming it, when the client is made', () => {
    process.env['HTTPS_PROXY'] = 'proxy.internal:3128';
    delete process.env['https_proxy'];
    expect(() => modelFor('openai-chat', model.url)).toThrow(
      /HTTPS_PROXY is not an http\(s\) URL \(got "proxy\.internal:3128"\)/,
    );
    expect(() => proxySettings({ http_proxy: 'socks://x' })).toThrow(/HTTP_PROXY is not an http\(s\) URL/);
  });

  it('reads the lower-case variables first, as curl does', () => {
    expect(
      proxySettings({
        HTTPS_PROXY: 'http://upper:1',
        https_proxy: 'http://lower:2',
        no_proxy: '.internal',
        NO_PROXY: 'x',
      }),
    ).toEqual({
      httpsProxy: 'http://lower:2',
      noProxy: '.internal',
    });
    expect(proxySettings({ HTTP_PROXY: ' ', NO_PROXY: '' })).toEqual({});
  });
});
