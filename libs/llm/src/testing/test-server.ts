import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { frameSse, type SseEvent } from './sse.js';

export type RecordedRequest = {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed JSON body, or the raw text when it is not JSON. */
  readonly body: unknown;
  /** The body as received (UTF-8), to compare byte for byte. */
  readonly text: string;
};

export type HttpReply =
  | {
      readonly type: 'json';
      readonly status?: number;
      readonly body: unknown;
      readonly headers?: Record<string, string>;
    }
  | {
      readonly type: 'sse';
      readonly events: readonly SseEvent[];
      /** Pause before each event, to stream slowly. */
      readonly delayMs?: number;
      readonly headers?: Record<string, string>;
    }
  | {
      /** A stream that never ends: `first`, then `next(0)`, `next(1)`, … until the client closes the connection. */
      readonly type: 'endless-sse';
      readonly first?: readonly SseEvent[];
      readonly next: (index: number) => SseEvent;
      /** Pause before each `next` event (0: as fast as the client reads). */
      readonly delayMs?: number;
    }
  | { readonly type: 'raw'; readonly status?: number; readonly body: string; readonly headers?: Record<string, string> }
  /** A JSON body (not an event stream) that starts with `head` and never ends: `filler` repeated as fast as the client reads. */
  | { readonly type: 'endless-json'; readonly head: string; readonly filler: string }
  /** Accept the request and never answer. */
  | { readonly type: 'hang' }
  /** Destroy the connection without a response. */
  | { readonly type: 'drop' };

export type ReplyScript = HttpReply | ((request: RecordedRequest) => HttpReply);

export type LlmTestServer = AsyncDisposable & {
  /** e.g. http://127.0.0.1:54321 */
  readonly url: string;
  /** `${url}/v1`, the baseURL the OpenAI SDK expects. */
  readonly baseURL: string;
  readonly requests: RecordedRequest[];
  /** Queue replies; each request takes the next one. */
  enqueue(...replies: ReplyScript[]): void;
  close(): Promise<void>;
};

/** An HTTP server on 127.0.0.1 that replays scripted provider replies and records what it received. */
export async function startTestServer(): Promise<LlmTestServer> {
  const requests: RecordedRequest[] = [];
  const queue: ReplyScript[] = [];
  const server = createServer((incoming, response) => {
    void handle(incoming, response);
  });

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const request: RecordedRequest = {
      method: incoming.method ?? 'GET',
      path: incoming.url ?? '/',
      headers: incoming.headers,
      body: parseBody(text),
      text,
    };
    requests.push(request);
    const script = queue.shift();
    const reply: HttpReply =
      script === undefined ? noReplyLeft(request) : typeof script === 'function' ? script(request) : script;
    await send(reply, response);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    enqueue: (...replies) => void queue.push(...replies),
    close,
    [Symbol.asyncDispose]: close,
  };
}

async function send(reply: HttpReply, response: ServerResponse): Promise<void> {
  switch (reply.type) {
    case 'json':
      response.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      response.end(JSON.stringify(reply.body));
      return;
    case 'raw':
      response.writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', ...reply.headers });
      response.end(reply.body);
      return;
    case 'hang':
      return;
    case 'drop':
      response.socket?.destroy();
      return;
    case 'sse':
      await sendSse(reply.events, reply.delayMs ?? 0, reply.headers ?? {}, response);
      return;
    case 'endless-sse':
      await sendEndlessSse(reply, response);
      return;
    case 'endless-json':
      await sendEndless(response, 'application/json', [reply.head], () => reply.filler);
  }
}

async function sendEndlessSse(
  reply: Extract<HttpReply, { type: 'endless-sse' }>,
  response: ServerResponse,
): Promise<void> {
  await sendEndless(
    response,
    'text/event-stream',
    (reply.first ?? []).map(frameSse),
    (index) => frameSse(reply.next(index)),
    reply.delayMs,
  );
}

/** Writes `first`, then `next(0)`, `next(1)`, … until the client goes away, as fast as it reads (or one every `delayMs`). */
async function sendEndless(
  response: ServerResponse,
  contentType: string,
  first: readonly string[],
  next: (index: number) => string,
  delayMs = 0,
): Promise<void> {
  response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-cache', connection: 'keep-alive' });
  response.flushHeaders();
  let closed = false;
  response.on('close', () => {
    closed = true;
  });
  for (const text of first) response.write(text);
  for (let index = 0; !closed; index += 1) {
    if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (closed) return;
    // as fast as the client reads, no faster: wait for the socket to drain
    if (!response.write(next(index))) await drained(response);
  }
}

function drained(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done).off('close', done);
      resolve();
    };
    response.on('drain', done).on('close', done);
  });
}

async function sendSse(
  events: readonly SseEvent[],
  delayMs: number,
  headers: Record<string, string>,
  response: ServerResponse,
): Promise<void> {
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  response.flushHeaders();
  let closed = false;
  response.on('close', () => {
    closed = true;
  });
  for (const event of events) {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (closed) return;
    response.write(frameSse(event));
  }
  response.end();
}

function parseBody(text: string): unknown {
  try {
    return text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

function noReplyLeft(request: RecordedRequest): HttpReply {
  return {
    type: 'json',
    status: 418,
    body: {
      error: {
        message: `test server: no scripted reply left for ${request.method} ${request.path}`,
        type: 'test_server_error',
      },
    },
  };
}
