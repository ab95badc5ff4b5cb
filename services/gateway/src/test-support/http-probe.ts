import { API_KEY_HEADER, ERROR_CODES, ErrorBody, type ServerFrame } from '@flotilla/api';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { GatewayConfig } from '../config.js';
import { ACME_KEY, type GatewayHarness } from './gateway-harness.js';

// ── requests and replies (through fastify's inject) ───────────────────────────────────────────

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'OPTIONS' | 'HEAD';
export type Reply = { status: number; text: string; json: unknown; headers: Record<string, string | string[] | number | undefined> };
export type RequestSpec = { method: Method; url: string; key?: string | undefined; payload?: string | undefined; contentType?: string | undefined };

export const MAX_BODY = 4_096;
export const MAX_FRAME = 4_096;
export const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

/** Small body and frame limits, no rate limit: a gateway to throw bad input at. */
export const PROBE_CONFIG: Partial<GatewayConfig> = { maxBodyBytes: MAX_BODY, maxFrameBytes: MAX_FRAME, rateLimitPerSecond: 0, authTimeoutMs: 2_000 };

/** An acme conversation with a handful of events (cursors need more than one page), and its event ids. */
export async function seedConversation(harness: GatewayHarness, title: string): Promise<{ conversation: string; eventIds: string[] }> {
  const conversation = (await harness.acme.createConversation({ title, message: 'first' })).conversation.id;
  await harness.produce({ tenant: 'acme', conversation }, 6, 'tick');
  const eventIds = (await harness.acme.searchEvents(conversation, { limit: 200 })).items.map((event) => event.id);
  return { conversation, eventIds };
}

export async function send(harness: GatewayHarness, spec: RequestSpec): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (spec.key !== undefined) headers[API_KEY_HEADER] = spec.key;
  if (spec.contentType !== undefined) headers['content-type'] = spec.contentType;
  const response = await harness.gateway.app.inject({ method: spec.method, url: spec.url, headers, ...(spec.payload !== undefined ? { payload: spec.payload } : {}) });
  let json: unknown;
  try {
    json = response.body.length > 0 ? JSON.parse(response.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, text: response.body, json, headers: response.headers };
}

/** A request with `body` as its JSON payload. */
export const sendJson = (harness: GatewayHarness, method: Method, url: string, body: unknown, key: string = ACME_KEY): Promise<Reply> =>
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

export type Socket = {
  readonly socket: WebSocket;
  readonly frames: ServerFrame[];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  frame(index: number, timeoutMs?: number): Promise<ServerFrame>;
};

export function openSocket(harness: GatewayHarness, path: string): Socket {
  const socket = new WebSocket(`${harness.url.replace(/^http/, 'ws')}${path}`);
  const frames: ServerFrame[] = [];
  const waiters: (() => void)[] = [];
  const wake = (): void => {
    for (const resolve of waiters.splice(0)) resolve();
  };
  socket.on('message', (data: Buffer) => {
    frames.push(JSON.parse(data.toString('utf8')) as ServerFrame);
    wake();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })));
  void closed.then(wake);
  const opened = new Promise<void>((resolve) => socket.on('open', () => resolve()));
  const frame = async (index: number, timeoutMs = 5_000): Promise<ServerFrame> => {
    const deadline = Date.now() + timeoutMs;
    while (frames.length <= index) {
      if (socket.readyState === WebSocket.CLOSED || Date.now() > deadline) throw new Error(`no frame ${index}: got ${JSON.stringify(frames)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
    return frames[index]!;
  };
  return { socket, frames, closed, opened, frame };
}

/** A socket on a conversation's events, authenticated and past replay (its `live` frame came). */
export async function liveSocket(harness: GatewayHarness, conversation: string, key: string = ACME_KEY): Promise<Socket> {
  const s = openSocket(harness, `/v1/conversations/${conversation}/events`);
  await s.opened;
  s.socket.send(JSON.stringify({ type: 'auth', api_key: key }));
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
