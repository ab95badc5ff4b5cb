import { readFile } from 'node:fs/promises';
import {
  API_KEY_HEADER,
  CloseCode,
  ERROR_CODES,
  ErrorBody,
  MAX_MESSAGE_BODY_BYTES,
  type EventPage,
} from '@flotilla/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  ACME_KEY,
  ADMIN_KEY,
  GLOBEX_KEY,
  startGatewayHarness,
  type GatewayHarness,
} from './test-support/gateway-harness.js';
import {
  expectError,
  expectIssue,
  KNOWN_CODES,
  liveSocket,
  MAX_BODY,
  MAX_FRAME,
  nextReply,
  openSocket,
  PROBE_CONFIG,
  seedConversation,
  send,
  sendJson,
  type Method,
  type Reply,
} from './test-support/http-probe.js';

let h: GatewayHarness;
/** An acme conversation with a handful of events (cursors need more than one page). */
let conversation: string;
let eventIds: string[] = [];

beforeAll(async () => {
  h = await startGatewayHarness(PROBE_CONFIG);
  ({ conversation, eventIds } = await seedConversation(h, 'bad input'));
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

const json = (method: Method, url: string, body: unknown, key: string = ACME_KEY): Promise<Reply> =>
  sendJson(h, method, url, body, key);
const get = (url: string, key: string = ACME_KEY): Promise<Reply> => send(h, { method: 'GET', url, key });

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

describe('REST ids, events, cursors and routes', () => {
  it('an unknown conversation id is 404 conversation_not_found', async () => {
    expectError(await get('/v1/conversations/no-such-conversation'), 404, 'conversation_not_found');
    expectError(await get('/v1/conversations/no-such-conversation/events'), 404, 'conversation_not_found');
    expectError(
      await json('POST', '/v1/conversations/no-such-conversation/messages', { text: 'hi' }),
      404,
      'conversation_not_found',
    );
    expectError(
      await send(h, { method: 'DELETE', url: '/v1/conversations/no-such-conversation', key: ACME_KEY }),
      404,
      'conversation_not_found',
    );
  });

  it('an invalid conversation id is 400, never a 5xx', async () => {
    for (const id of [
      'a.b',
      'a'.repeat(65),
      'a%20b',
      '%C3%A9t%C3%A9',
      'a%2Fb',
      '..%2F..',
      '%00',
      'a*b',
      'a%3Ab',
      'a;b',
      '%F0%9F%98%80',
    ]) {
      expectError(await get(`/v1/conversations/${id}`), 400, 'validation_failed', id);
      expectError(await get(`/v1/conversations/${id}/events/1`), 400, 'validation_failed', `${id}/events/1`);
    }
  });

  it('a malformed percent-escape in the path is 400 with a stable error body', async () => {
    for (const url of [
      '/v1/conversations/%ZZ',
      '/v1/conversations/%',
      `/v1/conversations/${conversation}/events/%E0%A4%A`,
    ]) {
      const reply = await get(url);
      expect(reply.status, url).toBe(400);
      const parsed = ErrorBody.safeParse(reply.json);
      expect(parsed.success, `${url} answered a body without error.code: ${reply.text}`).toBe(true);
    }
  });

  it('an unknown event seq or id is 404 event_not_found', async () => {
    const events = `/v1/conversations/${conversation}/events`;
    for (const key of ['0', '999', '999999999999999', 'no-such-event', 'evt:1.2'])
      expectError(await get(`${events}/${key}`), 404, 'event_not_found', key);
    expect((await get(`${events}/1`)).status).toBe(200);
    expect((await get(`${events}/${eventIds[2]!}`)).status).toBe(200);
    for (const key of ['a%20b', '-1%2F', 'a%2Fb'])
      expectError(await get(`${events}/${key}`), 400, 'validation_failed', key);
  });

  it('event ids of every length the EventId schema allows (1-128) are looked up', async () => {
    const events = `/v1/conversations/${conversation}/events`;
    for (const length of [64, 100, 101, 128])
      expectError(
        await get(`${events}/${'e'.repeat(length)}`),
        404,
        'event_not_found',
        `a valid ${length}-character event id`,
      );
  });

  it('path parameters longer than any valid id are refused with a stable error body', async () => {
    for (const url of [
      `/v1/conversations/${conversation}/events/${'x'.repeat(129)}`,
      `/v1/conversations/${'c'.repeat(101)}`,
    ]) {
      const reply = await get(url);
      expect([400, 414], `${url} → ${reply.status}`).toContain(reply.status);
      expect(ErrorBody.safeParse(reply.json).success, `${url} → ${reply.status} ${reply.text.slice(0, 200)}`).toBe(
        true,
      );
    }
  });

  it('invalid cursors are 400 invalid_cursor', async () => {
    const events = `/v1/conversations/${conversation}/events`;
    const page = (await get(`${events}?limit=2`)).json as EventPage;
    expect(page.next_cursor).toBeTypeOf('string');
    expect((await get(`${events}?limit=2&cursor=${page.next_cursor!}`)).status).toBe(200);
    const listPage = (await get('/v1/conversations?limit=1')).json as { next_cursor: string | null };
    await h.acme.createConversation({ title: 'second' });
    const list = (await get('/v1/conversations?limit=1')).json as { next_cursor: string | null };
    expect(list.next_cursor ?? listPage.next_cursor).toBeTypeOf('string');
    const listCursor = (list.next_cursor ?? listPage.next_cursor)!;
    const decoded = Buffer.from(page.next_cursor!, 'base64url').toString('utf8');
    const reencode = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');
    const tampered = [
      'garbage',
      '!!!!',
      '%00',
      listCursor, // a cursor of the conversations list
      reencode(decoded.replace(/\d+$/, 'x')),
      reencode(decoded.replace('e1:', 'e2:')),
      reencode(decoded.replace(/:(asc|desc):/, ':sideways:')),
      reencode(`${decoded}0000000000000000`),
      reencode(decoded.replace(/\d+$/, '-1')),
      page.next_cursor!.slice(0, -3),
    ];
    for (const cursor of tampered) {
      expectError(
        await get(`${events}?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_cursor',
        `events cursor ${cursor} (${Buffer.from(cursor, 'base64url').toString('utf8')})`,
      );
      expectError(
        await get(`${events}/count?cursor=${encodeURIComponent(cursor)}`),
        400,
        'validation_failed',
        'count takes no cursor',
      );
    }
    for (const cursor of [
      'garbage',
      page.next_cursor!,
      reencode('{"s":"-updated_at"}'),
      reencode('{"s":"-updated_at","k":7}'),
      reencode('null'),
      reencode('"x"'),
    ]) {
      expectError(
        await get(`/v1/conversations?cursor=${encodeURIComponent(cursor)}`),
        400,
        'invalid_cursor',
        `list cursor ${cursor}`,
      );
    }
    // a list cursor is bound to its sort
    expectError(
      await get(`/v1/conversations?sort=created_at&cursor=${listCursor}`),
      400,
      'invalid_cursor',
      'cursor of another sort',
    );
    // a cursor too long for the API is a validation failure, not a 5xx
    const tooLong = await get(`${events}?cursor=${'A'.repeat(600)}`);
    expect(tooLong.status).toBe(400);
  });

  it('an unknown route is 404 route_not_found', async () => {
    for (const [method, url] of [
      ['GET', '/v1/nope'],
      ['GET', '/nope'],
      ['GET', '/v2/conversations'],
      ['POST', `/v1/conversations/${conversation}/explode`],
      ['PUT', '/v1/conversations'],
      ['DELETE', '/v1/conversations'],
      ['OPTIONS', '/v1/conversations'],
      ['GET', `/v1/conversations/${conversation}/events/1/more`],
    ] as const) {
      expectError(await send(h, { method, url, key: ACME_KEY }), 404, 'route_not_found', `${method} ${url}`);
    }
  });
});

describe('WebSocket input', () => {
  it('a frame over maxFrameBytes closes the socket with 1009', async () => {
    const s = await liveSocket(h, conversation);
    s.socket.send(JSON.stringify({ type: 'message', text: 'x'.repeat(MAX_FRAME + 10) }));
    expect((await s.closed).code).toBe(CloseCode.MessageTooBig);
    // before authentication as well
    const early = openSocket(h, `/v1/conversations/${conversation}/events`);
    await early.opened;
    early.socket.send('y'.repeat(MAX_FRAME * 2));
    expect((await early.closed).code).toBe(CloseCode.MessageTooBig);
  });

  it('a non-JSON frame after auth is an invalid_json error frame, and the socket stays open', async () => {
    const s = await liveSocket(h, conversation);
    const start = s.frames.length;
    s.socket.send('this is not json {');
    const { frame, index } = await nextReply(s, start);
    expect(frame).toMatchObject({ type: 'error', code: 'invalid_json' });
    s.socket.send(JSON.stringify({ type: 'ping', id: 'still-here' }));
    const { frame: ack } = await nextReply(s, index + 1);
    expect(ack).toMatchObject({ type: 'ack', id: 'still-here', appended: false });
    expect(s.socket.readyState).toBe(WebSocket.OPEN);
    s.socket.close(1000);
    await s.closed;
  });

  it('an unknown frame type, or a bad field, is a validation_failed error frame (with the id echoed)', async () => {
    const s = await liveSocket(h, conversation);
    let at = s.frames.length;
    for (const bad of [
      { type: 'explode', id: 'f1' },
      { type: 'message', id: 'f2', text: 42 },
      { type: 'reject', id: 'f3' },
      { id: 'f4' },
      [1, 2],
      'text',
      7,
      null,
    ]) {
      s.socket.send(JSON.stringify(bad));
      const { frame, index } = await nextReply(s, at);
      at = index + 1;
      expect(frame, JSON.stringify(bad)).toMatchObject({ type: 'error', code: 'validation_failed' });
      const id = (bad as { id?: string } | null)?.id;
      if (id) expect((frame as { id?: string }).id).toBe(id);
      expect(KNOWN_CODES.has((frame as { code: string }).code)).toBe(true);
    }
    expect(s.socket.readyState).toBe(WebSocket.OPEN);
    s.socket.close(1000);
    await s.closed;
  });
});

describe('a request flood', () => {
  it('is answered with 429 rate_limited and Retry-After, never a 5xx, and the gateway still answers', async () => {
    await using flood = await startGatewayHarness({ rateLimitPerSecond: 20 });
    const { conversation: target } = await flood.acme.createConversation({ title: 'flood' });
    const urls = [
      '/v1/server-info',
      '/v1/conversations?limit=5',
      `/v1/conversations/${target.id}`,
      `/v1/conversations/${target.id}/events?limit=5`,
    ];
    const replies = await Promise.all(
      Array.from({ length: 300 }, async (_, index) => {
        const response = await fetch(`${flood.url}${urls[index % urls.length]!}`, {
          headers: { [API_KEY_HEADER]: ACME_KEY },
        });
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: (await response.json()) as unknown,
        };
      }),
    );
    const statuses = new Map<number, number>();
    for (const reply of replies) statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
    const limited = replies.filter((reply) => reply.status === 429);
    expect(limited.length, JSON.stringify([...statuses])).toBeGreaterThan(0);
    expect(replies.filter((reply) => reply.status === 200).length).toBeGreaterThan(0);
    expect(
      replies.filter((reply) => reply.status >= 500),
      JSON.stringify([...statuses]),
    ).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 429]);
    for (const reply of limited) {
      expect(ErrorBody.parse(reply.body).error.code).toBe('rate_limited');
      expect(reply.retryAfter).toMatch(/^[1-9]\d*$/);
    }
    // the gateway still answers: health, another tenant at once, and acme after Retry-After
    expect((await fetch(`${flood.url}/health`)).status).toBe(200);
    expect((await fetch(`${flood.url}/v1/server-info`, { headers: { [API_KEY_HEADER]: GLOBEX_KEY } })).status).toBe(
      200,
    );
    await new Promise((resolve) => setTimeout(resolve, Number(limited[0]!.retryAfter) * 1_000));
    expect((await fetch(`${flood.url}/v1/server-info`, { headers: { [API_KEY_HEADER]: ACME_KEY } })).status).toBe(200);
  });
});
