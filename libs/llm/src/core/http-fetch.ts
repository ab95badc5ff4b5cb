import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/**
 * A `fetch` for the provider SDKs over `node:http`, on keep-alive agents.
 *
 * The SDKs only ever send a JSON body (a string, or bytes the adapters built) and read a status,
 * headers and a body (often a server-sent event stream). Node's global `fetch` (undici) implements the whole Fetch standard for that: it
 * copies the body through a web stream on the way out, keeps request and response objects of the
 * standard, and reads the response through a byte stream. At hundreds of model calls a second
 * that was over a third of a step worker's CPU. This writes the body as it is and hands the
 * response chunks to a plain web stream, which the SDKs read as from any `fetch`.
 *
 * What it keeps of `fetch`: a `Response` with status, headers, url and a body stream; bodies
 * decoded from gzip, deflate or br; redirects followed (up to 20, 303 and a redirected POST become
 * GET, as fetch does; API keys and other credentials are not carried to another origin); the request's `AbortSignal` (an abort before the response rejects with the
 * signal's reason, during it errors the body); connection failures reject with
 * `TypeError('fetch failed', { cause })` and a body cut short errors with `TypeError('terminated')`,
 * as undici does. Any other kind of request body (streams, forms, blobs) or a `Request` object goes
 * to the global `fetch` unchanged.
 */
export const httpFetch: typeof fetch = (input, init) => {
  const url = input instanceof URL ? input : typeof input === 'string' ? new URL(input) : undefined;
  const body = requestBody(init?.body);
  if (!url || body === UNSUPPORTED || (url.protocol !== 'http:' && url.protocol !== 'https:')) return fetch(input, init);
  const headers = new Headers(init?.headers);
  const signal = init?.signal ?? undefined;
  const method = (init?.method ?? 'GET').toUpperCase();
  return send(url, method, headers, body, signal, init?.redirect ?? 'follow', 0);
};

/**
 * The most a response that is not an event stream may hold, decoded. A whole (non-streamed) reply
 * is buffered by the SDK before anything can measure it, so one that never ends would grow until
 * the timeout: past this its body fails with a `ResponseTooLargeError` cause (classified as
 * `reply_too_large`). Far above any real reply: `llm.maxReplyChars` bounds those, once parsed.
 */
export const MAX_WHOLE_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Why a response body was cut off: it passed MAX_WHOLE_RESPONSE_BYTES. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(readonly limitBytes: number) {
    super(`the response body passed ${limitBytes} bytes without ending`);
  }
}

const MAX_REDIRECTS = 20;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);
const UNSUPPORTED = Symbol('unsupported body');
/** Never sent on to another origin by a redirect (the providers' API keys travel in these). */
const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'api-key', 'cookie', 'proxy-authorization'];

const agents = {
  http: new http.Agent({ keepAlive: true, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, scheduling: 'lifo' }),
};

type FetchInit = NonNullable<Parameters<typeof fetch>[1]>;

/** A string is encoded once: its length and the socket then read the same bytes. */
function requestBody(body: FetchInit['body']): Buffer | undefined | typeof UNSUPPORTED {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  return UNSUPPORTED;
}

function ignore(): void {}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function send(
  url: URL,
  method: string,
  headers: Headers,
  body: Buffer | undefined,
  signal: AbortSignal | undefined,
  redirect: NonNullable<FetchInit['redirect']>,
  redirects: number,
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const outgoing: Record<string, string> = {};
    headers.forEach((value, name) => {
      outgoing[name] = value;
    });
    if (body !== undefined) outgoing['content-length'] = String(body.byteLength);
    else if (method === 'POST' || method === 'PUT' || method === 'PATCH') outgoing['content-length'] = '0';
    const secure = url.protocol === 'https:';
    const request = (secure ? https : http).request(url, { method, headers: outgoing, agent: secure ? agents.https : agents.http });

    let settled = false;
    const onAbort = (): void => {
      const reason = abortReason(signal!);
      request.destroy(reason instanceof Error ? reason : undefined);
      if (!settled) {
        settled = true;
        reject(reason);
      }
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const release = (): void => signal?.removeEventListener('abort', onAbort);

    // every stream here keeps an error listener for its whole life: an error with none would crash the process
    request.on('error', (error) => {
      if (settled) return;
      settled = true;
      release();
      reject(new TypeError('fetch failed', { cause: error }));
    });
    request.once('response', (response) => {
      if (settled) {
        response.destroy();
        return;
      }
      response.on('error', ignore);
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECTS.has(status) && location !== undefined && redirect !== 'manual') {
        response.resume();
        settled = true;
        release();
        if (redirect === 'error' || redirects >= MAX_REDIRECTS) {
          reject(new TypeError('fetch failed', { cause: new Error(redirect === 'error' ? 'unexpected redirect' : 'redirect count exceeded') }));
          return;
        }
        const next = new URL(location, url);
        const asGet = status === 303 || ((status === 301 || status === 302) && method === 'POST');
        const nextHeaders = new Headers(headers);
        if (asGet) for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) nextHeaders.delete(name);
        if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) nextHeaders.delete(name);
        resolve(send(next, asGet ? (method === 'HEAD' ? 'HEAD' : 'GET') : method, nextHeaders, asGet ? undefined : body, signal, redirect, redirects + 1));
        return;
      }
      settled = true;
      const hasBody = method !== 'HEAD' && !NULL_BODY_STATUSES.has(status);
      let result: Response;
      try {
        const responseHeaders = new Headers();
        const raw = response.rawHeaders;
        for (let index = 0; index < raw.length; index += 2) responseHeaders.append(raw[index]!, raw[index + 1]!);
        const eventStream = (response.headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
        result = new Response(hasBody ? webStream(decoded(response), response, signal, release, eventStream ? undefined : MAX_WHOLE_RESPONSE_BYTES) : null, {
          status,
          statusText: response.statusMessage ?? '',
          headers: responseHeaders,
        });
      } catch (error) {
        // a response fetch could not represent either (a status outside 200-599, a header it rejects)
        response.destroy();
        release();
        reject(new TypeError('fetch failed', { cause: error }));
        return;
      }
      if (!hasBody) {
        response.resume();
        release();
      }
      Object.defineProperty(result, 'url', { value: url.href });
      resolve(result);
    });
    request.end(body);
  });
}

/** The response body as sent, decoded when the server compressed it. */
function decoded(response: http.IncomingMessage): Readable {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
      : encoding === 'deflate'
        ? zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
        : encoding === 'br'
          ? zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH })
          : undefined;
  if (!decoder) return response;
  response.on('error', (error) => decoder.destroy(error));
  // a body cut short must not look complete just because the decoder ended
  response.on('close', () => {
    if (!response.complete) decoder.destroy(new TypeError('terminated'));
  });
  return response.pipe(decoder);
}

/**
 * A plain (not byte) web stream over a node stream, with backpressure: the node stream pauses while
 * the web stream's queue is full. `response` is the socket's message: a body cut short (the
 * connection closed before the end) errors the stream rather than ending it, with the signal's
 * reason when the request was aborted. A body past `limitBytes` errors the stream and closes the
 * connection.
 */
function webStream(source: Readable, response: http.IncomingMessage, signal: AbortSignal | undefined, release: () => void, limitBytes: number | undefined): ReadableStream<Uint8Array> {
  let done = false;
  let received = 0;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const finish = (error?: unknown): void => {
          if (done) return;
          done = true;
          release();
          if (signal?.aborted) controller.error(abortReason(signal));
          else if (error === undefined) controller.close();
          else controller.error(error);
        };
        source.on('data', (chunk: Buffer) => {
          if (done) return;
          received += chunk.length;
          if (limitBytes !== undefined && received > limitBytes) {
            finish(new TypeError('terminated', { cause: new ResponseTooLargeError(limitBytes) }));
            response.destroy();
            return;
          }
          controller.enqueue(chunk);
          if ((controller.desiredSize ?? 1) <= 0) source.pause();
        });
        source.once('end', () => finish());
        source.on('error', (error) => finish(error.name === 'AbortError' || error instanceof TypeError ? error : new TypeError('terminated', { cause: error })));
        response.once('close', () => {
          if (!response.complete) finish(new TypeError('terminated'));
        });
      },
      pull() {
        source.resume();
      },
      cancel() {
        done = true;
        release();
        response.destroy();
      },
    },
    { highWaterMark: 16 },
  );
}
