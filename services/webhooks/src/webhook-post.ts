import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { AddressPolicy } from './address-policy.js';

export type PostOutcome =
  /** The receiver answered 2xx. */
  | { readonly kind: 'delivered'; readonly status: number }
  /** It answered otherwise, or did not answer: tried again later. */
  | { readonly kind: 'failed'; readonly status: number | null; readonly error: string }
  /** The URL's host is, or resolves only to, an address that may not be reached: not tried again. */
  | { readonly kind: 'refused'; readonly error: string };

export type PostOptions = {
  readonly policy: AddressPolicy;
  readonly timeoutMs: number;
  readonly headers: Readonly<Record<string, string>>;
};

/** How much of a receiver's answer is read (the rest is dropped: only its status matters). */
const MAX_RESPONSE_BYTES = 16 * 1024;

class RefusedAddress extends Error {
  override readonly name = 'RefusedAddress';
}

function refusal(host: string, addresses: readonly string[], policy: AddressPolicy): string {
  const allowed =
    policy.allowed.length > 0
      ? `, nor in FLOTILLA_WEBHOOK_ALLOWED_NETWORKS (${policy.allowed.join(', ')})`
      : '; an operator may allow it with FLOTILLA_WEBHOOK_ALLOWED_NETWORKS';
  return `${host} is ${addresses.join(', ')}: a private, loopback, link-local or reserved address, not reached by webhooks${allowed}`;
}

/**
 * POSTs one webhook body. The address it connects to is checked against the policy where the
 * connection is made (a host name is resolved here and only its allowed addresses are used), so a
 * name that resolves to a refused address — or changes its answer between a check and the
 * connection — never reaches it. Redirects are not followed (a 3xx is a failure), the answer is
 * read up to 16 KiB, and the whole exchange is bounded by the timeout.
 */
export async function postWebhook(url: string, body: string, options: PostOptions): Promise<PostOutcome> {
  const target = new URL(url);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0 && !options.policy.allows(host))
    return { kind: 'refused', error: refusal(host, [host], options.policy) };
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    dnsLookup(
      hostname,
      { family: lookupOptions.family ?? 0, hints: lookupOptions.hints ?? 0, all: true },
      (error, addresses: LookupAddress[]) => {
        if (error) return callback(error, '', 0);
        const usable = addresses.filter((address) => options.policy.allows(address.address));
        if (usable.length === 0)
          return callback(
            new RefusedAddress(
              refusal(
                hostname,
                addresses.map((address) => address.address),
                options.policy,
              ),
            ),
            '',
            0,
          );
        if (lookupOptions.all)
          return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, usable);
        callback(null, usable[0]!.address, usable[0]!.family);
      },
    );
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const signal = AbortSignal.timeout(options.timeoutMs);
  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: PostOutcome): void => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const request = send(
      target,
      {
        method: 'POST',
        agent: false,
        lookup,
        signal,
        headers: {
          ...options.headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) response.destroy();
        });
        const done = (): void =>
          finish(
            status >= 200 && status < 300
              ? { kind: 'delivered', status }
              : { kind: 'failed', status, error: `HTTP ${status}` },
          );
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
      },
    );
    request.on('error', (error: Error & { code?: string }) => {
      if (error instanceof RefusedAddress || (error as { cause?: unknown }).cause instanceof RefusedAddress)
        return finish({
          kind: 'refused',
          error: error instanceof RefusedAddress ? error.message : (error.cause as Error).message,
        });
      if (signal.aborted)
        return finish({ kind: 'failed', status: null, error: `no answer within ${options.timeoutMs} ms` });
      finish({ kind: 'failed', status: null, error: error.code ? `${error.code}: ${error.message}` : error.message });
    });
    request.end(body);
  });
}
