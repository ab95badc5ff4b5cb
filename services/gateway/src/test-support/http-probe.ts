import { API_KEY_HEADER, ERROR_CODES, ErrorBody, type ServerFrame } from '@flotilla/api';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { GatewayConfig } from '../config.js';
import { ACME_KEY, type GatewayHarness } from './gateway-harness.js';

// ── requests and replies (through fastify's inject) ───────────────────────────────────────────

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'OPTIONS' | 'HEAD';
export type Reply = {
  status: number;
  text: string;
  json: unknown;
  headers: Record<string, string | string[] | number | undefined>;
};
export type RequestSpec = {
  method: Method;
  url: string;
  key?: string | undefined;
  payload?: string | undefined;
  contentType?: string | undefined;
};

export const MAX_BODY = 4_096;
export const MAX_FRAME = 4_096;
export const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** Small body and frame limits, no rate limit: a gateway to throw bad input at. */
export const PROBE_CONFIG: Partial<GatewayConfig> = {
  maxBodyBytes: MAX_BODY,
  maxFrameBytes: MAX_FRAME,
  rateLimitPerSecond: 0,
  authTimeoutMs: 2_000,
};

/** An acme conversation with a handful of events (cursors need more than one page), and its event ids. */
export async function seedConversation(
  harness: GatewayHarness,
  title: string,
): Promise<{ conversation: string; eventIds: string[] }> {
  const conversation = (await harness.acme.createConversation({ title, message: 'first' })).conversation.id;
  await harness.produce({ tenant: 'acme', conversation }, 6, 'tick');
  const eventIds = (await harness.acme.searchEvents(conversation, { limit: 200 })).items.map((event) => event.id);
  return { conversation, eventIds };
}

export async function send(harness: GatewayHarness, spec: RequestSpec): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (spec.key !== undefined) headers[API_KEY_HEADER] = spec.key;
  if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
  const response = await harness.gateway.app.inject({
    method: spec.method,
    url: spec.url,
    headers,
    ...(spec.payload !== undefined ? { payload: spec.payload } : {}),
  });
  let json: unknown;
  try {
    json = response.body.length > 0 ? JSON.parse(response.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, text: response.body, json, headers: response.headers };
}

/** A request with `body` as its JSON payload. */
export const sendJson = (
  harness: GatewayHarness,
  method: Method,
  url: string,
  body: unknown,
  key: string = ACME_KEY,
): Promise<Reply> =>
  send(harness, { method, url, key, payload: JSON.stringify(body), contentType: 'application/json' });

/** Asserts a well-formed error body with this status and code; returns it. */
export function expectError(reply: Reply, status: number, code: string, where = ''): ErrorBody['error'] {
  const context = `${where} → ${reply.status} ${reply.text.slice(0, 400)}`;
  expect(reply.status, context).toBe(status);
  const parsed = ErrorBody.safeParse(reply.json);
  expect(parsed.success, `not an error body: ${context}`).toBe(true);
  expect(parsed.data!.error.code, context).toBe(code);
  return parsed.data!.error;
}

export function expectIssue(reply: Reply, path: string, where = ''): void {
  const error = expectError(reply, 400, 'validation_failed', where);
  expect(
    error.issues?.map((issue) => issue.path),
    `${where}: issues should name ${path}`,
  ).toContain(path);
}

// ── WebSockets ───────────────────────────────────────────────────────────────────────────────

/** How a socket presents its API key: in its first frame once open (`{ type: 'auth', api_key }`), or in the upgrade's header. */
export type SocketAuth = { readonly frame: string } | { readonly header: string };

export type SocketOptions = {
  /** Left out: no key at all (the test sends its own first frame, or nothing). */
  readonly auth?: SocketAuth;
  /** Added to the path's query as `after_seq`. */
  readonly afterSeq?: number;
};

export type Socket = {
  /** The ws instance itself (a test may pause its `_socket` to stop reading). */
  readonly socket: WebSocket;
  /** Every frame received, parsed, in order. */
  readonly frames: ServerFrame[];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Resolves once upgraded (the auth frame, if any, already sent); rejects if the socket fails before that. */
  readonly opened: Promise<void>;
  /** The status of an HTTP answer instead of an upgrade (the handshake is then aborted); pending otherwise. */
  readonly refused: Promise<number>;
  /** Frame `index`, once it came; throws if the socket closes or `timeoutMs` passes first. */
  frame(index: number, timeoutMs?: number): Promise<ServerFrame>;
};

/** A raw WebSocket on the gateway at `path` that records every frame. */
export function openSocket(harness: GatewayHarness, path: string, options: SocketOptions = {}): Socket {
  const { auth, afterSeq } = options;
  const query = afterSeq === undefined ? '' : `${path.includes('?') ? '&' : '?'}after_seq=${afterSeq}`;
  const headers: Record<string, string> = auth && 'header' in auth ? { [API_KEY_HEADER]: auth.header } : {};
  const socket = new WebSocket(`${harness.url.replace(/^http/, 'ws')}${path}${query}`, { headers });
  const frames: ServerFrame[] = [];
  const waiters: (() => void)[] = [];
  const wake = (): void => {
    for (const resolve of waiters.splice(0)) resolve();
  };
  socket.on('message', (data: Buffer) => {
    frames.push(JSON.parse(data.toString('utf8')) as ServerFrame);
    wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
  void closed.then(wake);
  let refusedWith: number | undefined;
  const refused = new Promise<number>((resolve) =>
    socket.on('unexpected-response', (_request, response) => {
      refusedWith = response.statusCode ?? 0;
      resolve(refusedWith);
      socket.terminate(); // with this listener, ws leaves aborting the handshake to us
    }),
  );
  const opened = new Promise<void>((resolve, reject) => {
    socket.on('open', () => {
      if (auth && 'frame' in auth) socket.send(JSON.stringify({ type: 'auth', api_key: auth.frame }));
      resolve();
    });
    socket.on('error', (error: Error) =>
      reject(refusedWith === undefined ? error : new Error(`the upgrade was refused with HTTP ${refusedWith}`)),
    );
  });
  void opened.catch(() => undefined); // a test that expects a refusal need not await `opened`
  const frame = async (index: number, timeoutMs = 5_000): Promise<ServerFrame> => {
    const deadline = Date.now() + timeoutMs;
    while (frames.length <= index) {
      if (socket.readyState === WebSocket.CLOSED || Date.now() > deadline)
        throw new Error(`no frame ${index}: got ${JSON.stringify(frames)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return frames[index]!;
  };
  return { socket, frames, closed, opened, refused, frame };
}

/** A socket on a conversation's events, authenticated and past replay (its `live` frame came). */
export async function liveSocket(
  harness: GatewayHarness,
  conversation: string,
  key: string = ACME_KEY,
): Promise<Socket> {
  const s = openSocket(harness, `/v1/conversations/${conversation}/events`, { auth: { frame: key } });
  await s.opened;
  expect((await s.frame(0)).type).toBe('sync');
  const deadline = Date.now() + 5_000;
  while (!s.frames.some((frame) => frame.type === 'live')) {
    if (Date.now() > deadline) throw new Error(`no live frame: ${JSON.stringify(s.frames.map((frame) => frame.type))}`);
    await s.frame(s.frames.length, 5_000);
  }
  return s;
}

/** The next frame that is not a durable event (events of other tests may arrive live). */
export async function nextReply(s: Socket, from: number): Promise<{ frame: ServerFrame; index: number }> {
  for (let index = from; ; index += 1) {
    const frame = await s.frame(index);
    if (frame.type !== 'event') return { frame, index };
  }
}
