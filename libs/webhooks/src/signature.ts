import { createHmac, timingSafeEqual } from 'node:crypto';

/** The headers of a webhook POST (docs/api.md, "Webhooks"). HTTP header names are case-insensitive. */
export const WebhookHeader = {
  /** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the signing secret>`. */
  Signature: 'Flotilla-Signature',
  /** The event's id, the same on every delivery of it: de-duplicate on it. */
  EventId: 'Flotilla-Event-Id',
  EventType: 'Flotilla-Event-Type',
  WebhookId: 'Flotilla-Webhook-Id',
  /** 1 for the first attempt, 2 for the first retry, … */
  Attempt: 'Flotilla-Delivery-Attempt',
} as const;

/** How old a signature's timestamp a receiver accepts by default (replay protection). */
export const DEFAULT_SIGNATURE_TOLERANCE_SECONDS = 300;

function hmac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(body, 'utf8').digest('hex');
}

/** The Flotilla-Signature value of `body` signed at `timestamp` (unix seconds) with the webhook's secret. */
export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${hmac(secret, timestamp, body)}`;
}

export type SignatureCheck =
  { readonly ok: true; readonly timestamp: number } | { readonly ok: false; readonly reason: string };

/**
 * What a receiver does with a POST (the recipe of docs/api.md): read `t` and every `v1` of the
 * header, recompute the HMAC of `<t>.<raw body>` and compare in constant time, and refuse a
 * timestamp further than `toleranceSeconds` from now (a replayed request).
 */
export function verifySignature(
  secret: string,
  header: string | undefined,
  body: string,
  options: { readonly toleranceSeconds?: number; readonly nowSeconds?: number } = {},
): SignatureCheck {
  if (!header) return { ok: false, reason: `no ${WebhookHeader.Signature} header` };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [name, value = ''] = part.trim().split('=', 2);
    if (name === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && /^[0-9a-f]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === undefined) return { ok: false, reason: 'the header has no timestamp t=' };
  if (signatures.length === 0) return { ok: false, reason: 'the header has no v1= signature' };
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1_000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_SIGNATURE_TOLERANCE_SECONDS;
  if (Math.abs(now - timestamp) > tolerance)
    return {
      ok: false,
      reason: `the timestamp is ${now - timestamp} s from now, more than the ${tolerance} s tolerated`,
    };
  const expected = Buffer.from(hmac(secret, timestamp, body), 'hex');
  const matches = signatures.some((signature) => timingSafeEqual(Buffer.from(signature, 'hex'), expected));
  return matches ? { ok: true, timestamp } : { ok: false, reason: 'no signature matches the body under this secret' };
}
