// Bad REST bodies and queries answered with a stable error body, and the error codes docs/api.md
// lists. (Ids, cursors, routes and WebSocket frames: bad-input-paths-and-frames.test.ts; a
// request flood: bad-input-flood.test.ts.)
import { readFile } from 'node:fs/promises';
import { API_KEY_HEADER, ERROR_CODES, ErrorBody, MAX_MESSAGE_BODY_BYTES } from '@flotilla/api';
import { describe, expect, it } from 'vitest';
import { conversation, get, h, json, startBadInputGateway } from './test-support/bad-input-gateway.js';
import { ACME_KEY, ADMIN_KEY } from './test-support/gateway-harness.js';
import { expectError, expectIssue, MAX_BODY, send } from './test-support/http-probe.js';

startBadInputGateway();

describe('REST bodies', () => {
  it('malformed JSON is 400 invalid_json', async () => {
    for (const payload of ['{"title":', '{title: "x"}', "{'a':1}", '[1,2', '{"a":1}}', 'nul', '\u0000']) {
      expectError(
        await send(h, {
          method: 'POST',
          url: '/v1/conversations',
          key: ACME_KEY,
          payload,
          contentType: 'application/json',
        }),
        400,
        'invalid_json',
        payload,
      );
    }
    // an empty JSON body, and a prototype-poisoning one
    expectError(
      await send(h, {
        method: 'POST',
        url: `/v1/conversations/${conversation}/run`,
        key: ACME_KEY,
        payload: '',
        contentType: 'application/json',
      }),
      400,
      'invalid_json',
      'empty',
    );
    const poisoned = await send(h, {
      method: 'POST',
      url: '/v1/conversations',
      key: ACME_KEY,
      payload: '{"__proto__":{"admin":true}}',
      contentType: 'application/json',
    });
    expect(poisoned.status).toBe(400);
    expect(['invalid_json', 'validation_failed']).toContain(ErrorBody.parse(poisoned.json).error.code);
  });

  it('wrong types are 400 validation_failed with issues naming the field', async () => {
    const base = `/v1/conversations/${conversation}`;
    expectIssue(await json('POST', `${base}/messages`, { text: 5 }), 'body.text', 'text: 5');
    expectIssue(await json('POST', `${base}/messages`, { text: '' }), 'body.text', "text: ''");
    expectIssue(await json('POST', `${base}/messages`, { text: 'hi', run: 'yes' }), 'body.run', "run: 'yes'");
    expectIssue(await json('POST', `${base}/messages`, {}), 'body.text', 'no text');
    expectIssue(await json('POST', '/v1/conversations', { title: 42 }), 'body.title', 'title: 42');
    expectIssue(await json('POST', '/v1/conversations', { tags: 'a,b' }), 'body.tags', "tags: 'a,b'");
    expectIssue(await json('POST', '/v1/conversations', { tags: ['x'.repeat(65)] }), 'body.tags.0', 'a tag too long');
    expectIssue(await json('POST', '/v1/conversations', { id: 'a.b' }), 'body.id', 'id: a.b');
    expectIssue(await json('POST', '/v1/conversations', { run: true }), 'body.run', 'run without a message');
    expectIssue(await json('PATCH', base, {}), 'body.title', 'an empty update');
    expectIssue(await json('PATCH', base, { title: null }), 'body.title', 'title: null');
    expectIssue(await json('POST', `${base}/confirmation`, { decision: 'maybe' }), 'body.decision', 'decision: maybe');
    expectIssue(
      await json('POST', `${base}/confirmation`, { decision: 'reject' }),
      'body.reason',
      'reject without a reason',
    );
    expectIssue(await json('POST', `${base}/pause`, { reason: 7 }), 'body.reason', 'reason: 7');
    expectIssue(
      await json('POST', '/v1/admin/api-keys', { tenant: 'a.b', name: 'x' }, ADMIN_KEY),
      'body.tenant',
      'tenant: a.b',
    );
    expectIssue(await json('POST', '/v1/conversations', 'a string'), 'body', 'a JSON string');
    expectIssue(await json('POST', '/v1/conversations', [1, 2]), 'body', 'a JSON array');
  });

  it('wrong query values are 400 validation_failed naming the parameter', async () => {
    const events = `/v1/conversations/${conversation}/events`;
    for (const [url, path] of [
      ['/v1/conversations?limit=abc', 'query.limit'],
      ['/v1/conversations?limit=0', 'query.limit'],
      ['/v1/conversations?limit=201', 'query.limit'],
      ['/v1/conversations?limit=1.5', 'query.limit'],
      ['/v1/conversations?limit=1&limit=2', 'query.limit'],
      ['/v1/conversations?status=bogus', 'query.status'],
      ['/v1/conversations?sort=title', 'query.sort'],
      ['/v1/conversations/count?status=bogus', 'query.status'],
      ['/v1/conversations/batch', 'query.ids'],
      ['/v1/conversations/batch?ids=a.b', 'query.ids.0'],
      [`/v1/conversations/batch?ids=${Array.from({ length: 101 }, (_, index) => `c${index}`).join(',')}`, 'query.ids'],
      [`${events}?after_seq=-1`, 'query.after_seq'],
      [`${events}?after_seq=x`, 'query.after_seq'],
      [`${events}?order=sideways`, 'query.order'],
      [`${events}?limit=0`, 'query.limit'],
      [`${events}?type=bogus`, 'query.type.0'],
      [`${events}?source=martians`, 'query.source.0'],
      [`${events}?since=yesterday`, 'query.since'],
      [`${events}?until=2026-01-01`, 'query.until'],
      [`${events}?text=`, 'query.text'],
      [`${events}/count?type=message,bogus`, 'query.type.1'],
    ] as const) {
      expectIssue(await get(url), path, url);
    }
  });

  it('unknown fields in strict bodies and queries are 400 validation_failed', async () => {
    for (const [method, url, body, unknown] of [
      ['POST', '/v1/conversations', { titel: 'typo' }, 'titel'],
      ['POST', `/v1/conversations/${conversation}/messages`, { text: 'hi', urgent: true }, 'urgent'],
      ['POST', `/v1/conversations/${conversation}/run`, { force: true }, 'force'],
      ['POST', `/v1/conversations/${conversation}/pause`, { reason: 'x', now: true }, 'now'],
      ['POST', `/v1/conversations/${conversation}/confirmation`, { decision: 'approve', reason: 'extra' }, 'reason'],
      ['PATCH', `/v1/conversations/${conversation}`, { title: 'ok', owner: 'me' }, 'owner'],
      ['POST', '/v1/admin/api-keys', { tenant: 'acme', name: 'x', scope: 'all' }, 'scope'],
    ] as const) {
      const reply = await json(method, url, body, url.includes('admin') ? ADMIN_KEY : ACME_KEY);
      const error = expectError(reply, 400, 'validation_failed', `${method} ${url}`);
      expect(JSON.stringify(error), `${method} ${url} should name ${unknown}`).toContain(unknown);
    }
    expectError(await get('/v1/conversations?limt=5'), 400, 'validation_failed', 'limt');
    expectError(await get(`/v1/conversations/${conversation}/events?after=3`), 400, 'validation_failed', 'after');
  });

  it('a body over maxBodyBytes is 413 body_too_large (over the message routes’ own limit, which images need, for those)', async () => {
    const big = JSON.stringify({ text: 'x'.repeat(MAX_MESSAGE_BODY_BYTES) });
    expectError(
      await send(h, {
        method: 'POST',
        url: `/v1/conversations/${conversation}/messages`,
        key: ACME_KEY,
        payload: big,
        contentType: 'application/json',
      }),
      413,
      'body_too_large',
    );
    expectError(
      await send(h, {
        method: 'POST',
        url: '/v1/conversations',
        key: ACME_KEY,
        payload: `{"title":"${'y'.repeat(MAX_BODY * 4)}"}`,
        contentType: 'application/json',
      }),
      413,
      'body_too_large',
    );
    // over the limit over real HTTP too (chunked, no content-length)
    const response = await fetch(`${h.url}/v1/conversations/${conversation}/messages`, {
      method: 'POST',
      headers: { [API_KEY_HEADER]: ACME_KEY, 'content-type': 'application/json' },
      body: new Blob([big]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(ErrorBody.parse(await response.json()).error.code).toBe('body_too_large');
    // just under the limit is fine
    const fits = await json('POST', `/v1/conversations/${conversation}/messages`, { text: 'z'.repeat(MAX_BODY - 100) });
    expect(fits.status).toBe(202);
  });

  it('a body that is not JSON by its content-type is 415 unsupported_media_type', async () => {
    const payload = JSON.stringify({ title: 'typed' });
    for (const contentType of [
      'application/x-www-form-urlencoded',
      'application/xml',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'image/png',
      'text/plain',
      'text/plain; charset=utf-8',
      'text/html',
      'application/json-patch+json',
    ]) {
      const reply = await send(h, { method: 'POST', url: '/v1/conversations', key: ACME_KEY, payload, contentType });
      const where = `content-type ${contentType} → ${reply.status} ${reply.text}`;
      expect([reply.status, ErrorBody.parse(reply.json).error.code], where).toEqual([415, 'unsupported_media_type']);
    }
    // the JSON media type with a charset is JSON
    const withCharset = await send(h, {
      method: 'POST',
      url: '/v1/conversations',
      key: ACME_KEY,
      payload,
      contentType: 'application/json; charset=utf-8',
    });
    expect(withCharset.status).toBe(201);
  });
});

describe('the error codes', () => {
  it('docs/api.md lists every code the API answers with, in its Errors section', async () => {
    const doc = await readFile(new URL('../../../docs/api.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Errors'), doc.indexOf('## REST routes'));
    expect(ERROR_CODES.filter((code) => !section.includes(`\`${code}\``))).toEqual([]);
  });
});
