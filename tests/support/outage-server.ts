import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadErrorBody } from '@flotilla/llm/testing';

/**
 * How a provider is out: an error status with a recorded error body of its family (OpenAI's or
 * Anthropic's wire format, e.g. 503 `server_error`, 429 `rate_limit` with a Retry-After, Anthropic's
 * 529 `overloaded`), or `hang`: the request is taken and never answered.
 */
export type Outage =
  | {
      readonly status: number;
      readonly family: 'openai' | 'anthropic';
      readonly kind: string;
      readonly headers?: Readonly<Record<string, string>>;
    }
  | 'hang';

export type OutageServer = AsyncDisposable & {
  /** The base URL of the provider out as `name`, for the SDK of `provider` (the OpenAI SDK's ends with /v1). */
  baseURL(name: string, provider: 'openai-chat' | 'openai-responses' | 'anthropic'): string;
  /** The request bodies the provider out as `name` received, as received. */
  requests(name: string): readonly string[];
  close(): Promise<void>;
};

/** A model server whose providers are out, each under its own path (`/<name>/…`), every request answered as its outage says. */
export async function startOutageServer(outages: Readonly<Record<string, Outage>>): Promise<OutageServer> {
  const received = new Map<string, string[]>(Object.keys(outages).map((name) => [name, []]));
  const server = createServer((request, response) => void handle(request, response));

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const name = (request.url ?? '/').split('/')[1] ?? '';
    const outage = outages[name];
    if (outage === undefined) {
      response
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `no provider ${name} here`, type: 'invalid_request_error' } }));
      return;
    }
    received.get(name)!.push(Buffer.concat(chunks).toString('utf8'));
    if (outage === 'hang') return;
    response
      .writeHead(outage.status, { 'content-type': 'application/json', ...outage.headers })
      .end(JSON.stringify(loadErrorBody(outage.family, outage.kind)));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = async (): Promise<void> => {
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    baseURL: (name, provider) => (provider === 'anthropic' ? `${url}/${name}` : `${url}/${name}/v1`),
    requests: (name) => received.get(name) ?? [],
    close,
    [Symbol.asyncDispose]: close,
  };
}
