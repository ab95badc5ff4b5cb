import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { EnvHttpProxyAgent, type Dispatcher } from 'undici';
import { LlmError } from './errors.js';

/**
 * A `fetch` for the provider SDKs over undici's dispatcher API, on keep-alive connections, through
 * the proxy the environment names.
 *
 * The SDKs only ever send a JSON body (a string, or bytes the adapters built) and read a status,
 * headers and a body (often a server-sent event stream). Node's global `fetch` (undici's too)
 * implements the whole Fetch standard for that: it copies the body through a web stream on the way
 * out, keeps request and response objects of the standard, and reads the response through a byte
 * stream. At hundreds of model calls a second that was over a third of a step worker's CPU. This
 * hands the body as it is to the dispatcher's `request` and the response chunks to a plain web
 * stream, which the SDKs read as from any `fetch` (`npm run bench -- model-transport` compares the two).
 *
 * Proxies: `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (or their lower-case forms, which win, as
 * curl's do) are read when the transport is made (`httpFetchFor`). An https URL goes through a
 * CONNECT tunnel of `HTTPS_PROXY` (or `HTTP_PROXY` when only that is set), an http URL to
 * `HTTP_PROXY` as a request with the absolute URI, and a host `NO_PROXY` matches goes direct.
 *
 * What it keeps of `fetch`: a `Response` with status, headers, url and a body stream; bodies
 * decoded from gzip, deflate or br; redirects followed (up to 20, 303 and a redirected POST become
 * GET, as fetch does; API keys and other credentials are not carried to another origin); the request's `AbortSignal` (an abort before the response rejects with the
 * signal's reason, during it errors the body); connection failures reject with
 * `TypeError('fetch failed', { cause })` and a body cut short errors with `TypeError('terminated')`,
 * as undici does. No timeouts of its own: the managed model times each attempt. Any other kind of
 * request body (streams, forms, blobs) or a `Request` object goes to the global `fetch`, on the
 * same dispatcher.
 */
export type HttpFetchOptions = {
  /** The proxies to go through; `proxySettings(process.env)` by default. */
  readonly proxy?: ProxySettings;
  /** Certificate authorities to trust instead of Node's (tests: a local TLS server's own certificate). */
  readonly ca?: string | Buffer;
};

/** Proxy settings: the proxies' URLs and the hosts that go direct, as NO_PROXY lists them. */
export type ProxySettings = { readonly httpProxy?: string; readonly httpsProxy?: string; readonly noProxy?: string };

/**
 * The proxy settings of an environment, read as curl and undici read them (the lower-case variable
 * first). A proxy variable that is not an http(s) URL is an `invalid_config` error naming it.
 */
export function proxySettings(env: Readonly<Record<string, string | undefined>> = process.env): ProxySettings {
  const read = (name: string): string | undefined => {
    const value = env[name.toLowerCase()] ?? env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const proxyUrl = (name: string): string | undefined => {
    const value = read(name);
    if (value === undefined) return undefined;
    let protocol: string | undefined;
    try {
      protocol = new URL(value).protocol;
    } catch {
      protocol = undefined;
    }
    if (protocol !== 'http:' && protocol !== 'https:') {
      throw new LlmError(
        'invalid_config',
        `${name} is not an http(s) URL (got ${JSON.stringify(value)}): set it to the proxy's URL, such as http://proxy.internal:3128, or unset it.`,
      );
    }
    return value;
  };
  const httpProxy = proxyUrl('HTTP_PROXY');
  const httpsProxy = proxyUrl('HTTPS_PROXY');
  const noProxy = read('NO_PROXY');
  return {
    ...(httpProxy === undefined ? {} : { httpProxy }),
    ...(httpsProxy === undefined ? {} : { httpsProxy }),
    ...(noProxy === undefined ? {} : { noProxy }),
  };
}

/**
 * Kept-alive connections: idle ones are kept up to a minute (or what the server's Keep-Alive asks,
 * up to ten); undici's header and body timeouts (5 minutes each) are off, as a long model answer
 * may take longer and the managed model bounds every attempt itself.
 */
const AGENT_OPTIONS = {
  keepAliveTimeout: 60_000,
  keepAliveMaxTimeout: 600_000,
  headersTimeout: 0,
  bodyTimeout: 0,
} as const;

const transports = new Map<string, typeof fetch>();

/**
 * The transport for an environment's proxy variables, made once per distinct settings and shared,
 * so that every client of a process draws on the same kept-alive connections. The provider
 * clients call it when they are made: the environment is read then.
 */
export function httpFetchFor(env: Readonly<Record<string, string | undefined>> = process.env): typeof fetch {
  const proxy = proxySettings(env);
  const key = JSON.stringify(proxy);
  let transport = transports.get(key);
  if (!transport) {
    transport = createHttpFetch({ proxy });
    transports.set(key, transport);
  }
  return transport;
}

/** A transport of its own (its own connections), through the proxies given. */
export function createHttpFetch(options: HttpFetchOptions = {}): typeof fetch {
  const proxy = options.proxy ?? proxySettings();
  const tls = options.ca === undefined ? {} : { connect: { ca: options.ca }, requestTls: { ca: options.ca } };
  const dispatcher = new EnvHttpProxyAgent({
    ...AGENT_OPTIONS,
    ...tls,
    // an absent setting is given as '', so that undici does not read process.env itself
    httpProxy: proxy.httpProxy ?? '',
    httpsProxy: proxy.httpsProxy ?? '',
    noProxy: proxy.noProxy ?? '',
    // a plain-http request goes to an http proxy as a request with the absolute URI, not a tunnel
    proxyTunnel: false,
  });
  return (input, init) => {
    const url = input instanceof URL ? input : typeof input === 'string' ? new URL(input) : undefined;
    const body = requestBody(init?.body);
    if (!url || body === UNSUPPORTED || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return fetch(input, { ...init, dispatcher } as RequestInit);
    }
    const headers = new Headers(init?.headers);
    const signal = init?.signal ?? undefined;
    const method = (init?.method ?? 'GET').toUpperCase();
    return send(dispatcher, url, method, headers, body, signal, init?.redirect ?? 'follow', 0);
  };
}

let processTransport: typeof fetch | undefined;

/** The process's transport: through the proxies its environment names, read at the first request. */
export const httpFetch: typeof fetch = (input, init) => (processTransport ??= httpFetchFor())(input, init);

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
  dispatcher: Dispatcher,
  url: URL,
  method: string,
  headers: Headers,
  body: Buffer | undefined,
  signal: AbortSignal | undefined,
  redirect: NonNullable<FetchInit['redirect']>,
  redirects: number,
): Promise<Response> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const outgoing: Record<string, string> = {};
  headers.forEach((value, name) => {
    outgoing[name] = value;
  });
  if (body === undefined && (method === 'POST' || method === 'PUT' || method === 'PATCH'))
    outgoing['content-length'] = '0';
  const request = dispatcher.request({
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: method as Dispatcher.HttpMethod,
    headers: outgoing,
    body: body ?? null,
    ...(signal === undefined ? {} : { signal }),
  });
  return request.then(
    (response) => {
      const { statusCode: status, body: source } = response;
      // every stream here keeps an error listener for its whole life: an error with none would crash the process
      source.on('error', ignore);
      const location = single(response.headers.location);
      if (REDIRECTS.has(status) && location !== undefined && redirect !== 'manual') {
        source.resume();
        if (redirect === 'error' || redirects >= MAX_REDIRECTS) {
          throw new TypeError('fetch failed', {
            cause: new Error(redirect === 'error' ? 'unexpected redirect' : 'redirect count exceeded'),
          });
        }
        const next = new URL(location, url);
        const asGet = status === 303 || ((status === 301 || status === 302) && method === 'POST');
        const nextHeaders = new Headers(headers);
        if (asGet)
          for (const name of [
            'content-type',
            'content-length',
            'content-encoding',
            'content-language',
            'content-location',
          ])
            nextHeaders.delete(name);
        if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) nextHeaders.delete(name);
        return send(
          dispatcher,
          next,
          asGet ? (method === 'HEAD' ? 'HEAD' : 'GET') : method,
          nextHeaders,
          asGet ? undefined : body,
          signal,
          redirect,
          redirects + 1,
        );
      }
      const hasBody = method !== 'HEAD' && !NULL_BODY_STATUSES.has(status);
      let result: Response;
      try {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (Array.isArray(value)) for (const each of value) responseHeaders.append(name, each);
          else if (value !== undefined) responseHeaders.append(name, value);
        }
        const eventStream = (single(response.headers['content-type']) ?? '')
          .toLowerCase()
          .startsWith('text/event-stream');
        result = new Response(
          hasBody
            ? webStream(
                decoded(source, response.headers),
                source,
                signal,
                eventStream ? undefined : MAX_WHOLE_RESPONSE_BYTES,
              )
            : null,
          {
            status,
            statusText: response.statusText ?? '',
            headers: responseHeaders,
          },
        );
      } catch (error) {
        // a response fetch could not represent either (a status outside 200-599, a header it rejects)
        source.destroy();
        throw new TypeError('fetch failed', { cause: error });
      }
      if (!hasBody) source.resume();
      Object.defineProperty(result, 'url', { value: url.href });
      return result;
    },
    (error: unknown) => {
      if (signal?.aborted) throw abortReason(signal);
      throw new TypeError('fetch failed', { cause: error });
    },
  );
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The response body as sent, decoded when the server compressed it. */
function decoded(response: Readable, headers: IncomingHttpHeaders): Readable {
  const encoding = (single(headers['content-encoding']) ?? '').trim().toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
      : encoding === 'deflate'
        ? zlib.createInflate({ flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH })
        : encoding === 'br'
          ? zlib.createBrotliDecompress({
              flush: zlib.constants.BROTLI_OPERATION_FLUSH,
              finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
            })
          : undefined;
  if (!decoder) return response;
  // a body cut short errors its stream (undici checks the length and the chunked ending): the decoder must not end as if complete
  response.on('error', (error) => decoder.destroy(error));
  return response.pipe(decoder);
}

/**
 * A plain (not byte) web stream over a node stream, with backpressure: the node stream pauses while
 * the web stream's queue is full. `response` is the connection's body: a body cut short (the
 * connection closed before the end) errors the stream rather than ending it, with the signal's
 * reason when the request was aborted. A body past `limitBytes` errors the stream and closes the
 * connection.
 */
function webStream(
  source: Readable,
  response: Readable,
  signal: AbortSignal | undefined,
  limitBytes: number | undefined,
): ReadableStream<Uint8Array> {
  let done = false;
  let received = 0;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const finish = (error?: unknown): void => {
          if (done) return;
          done = true;
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
        source.on('error', (error) =>
          finish(
            error.name === 'AbortError' || error instanceof TypeError
              ? error
              : new TypeError('terminated', { cause: error }),
          ),
        );
        // destroyed without an error (an abort undici reports so): never complete
        source.once('close', () => finish(new TypeError('terminated')));
      },
      pull() {
        source.resume();
      },
      cancel() {
        done = true;
        response.destroy();
      },
    },
    { highWaterMark: 16 },
  );
}
