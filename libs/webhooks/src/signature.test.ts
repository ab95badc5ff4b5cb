import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureHeader, verifySignature } from './signature.js';

const SECRET = 'whsec_test-secret-0123456789abcdef';
const BODY = '{"id":"evt_1","type":"conversation.finished"}';
const NOW = 1_800_000_000;

describe('webhook signatures', () => {
  it('are HMAC-SHA256 of "<t>.<body>" under the secret, hex, in t=…,v1=…', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.${BODY}`).digest('hex');
    expect(signatureHeader(SECRET, NOW, BODY)).toBe(`t=${NOW},v1=${expected}`);
  });

  it('verify with the same secret and body within the tolerance', () => {
    expect(verifySignature(SECRET, signatureHeader(SECRET, NOW, BODY), BODY, { nowSeconds: NOW + 299 })).toEqual({
      ok: true,
      timestamp: NOW,
    });
  });

  it('refuse another secret, a changed body, a missing or malformed header', () => {
    const header = signatureHeader(SECRET, NOW, BODY);
    expect(verifySignature('whsec_another', header, BODY, { nowSeconds: NOW })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no signature matches/),
    });
    expect(
      verifySignature(SECRET, header, BODY.replace('finished', 'status_changed'), { nowSeconds: NOW }),
    ).toMatchObject({ ok: false });
    expect(verifySignature(SECRET, undefined, BODY, { nowSeconds: NOW })).toMatchObject({
      ok: false,
      reason: 'no Flotilla-Signature header',
    });
    expect(verifySignature(SECRET, 'v1=abc', BODY, { nowSeconds: NOW })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/timestamp/),
    });
    expect(verifySignature(SECRET, `t=${NOW}`, BODY, { nowSeconds: NOW })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/v1/),
    });
  });

  it('refuse a replay: a timestamp outside the tolerance, even with a valid signature', () => {
    const header = signatureHeader(SECRET, NOW, BODY);
    expect(verifySignature(SECRET, header, BODY, { nowSeconds: NOW + 301 })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/301 s from now/),
    });
    expect(verifySignature(SECRET, header, BODY, { nowSeconds: NOW - 400, toleranceSeconds: 600 })).toMatchObject({
      ok: true,
    });
  });

  it('accept any of several v1 signatures (a receiver may see more than one during a change of secret)', () => {
    const good = signatureHeader(SECRET, NOW, BODY).split(',')[1]!;
    expect(verifySignature(SECRET, `t=${NOW},v1=${'0'.repeat(64)},${good}`, BODY, { nowSeconds: NOW })).toMatchObject({
      ok: true,
    });
  });
});
