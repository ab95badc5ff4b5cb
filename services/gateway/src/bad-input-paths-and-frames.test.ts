// Bad ids, event keys, cursors and routes in REST paths, and bad WebSocket frames, answered with
// a stable error (body or frame). (Bodies and queries: bad-input-bodies.test.ts.)
import { CloseCode, ErrorBody, type EventPage } from '@flotilla/api';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { conversation, eventIds, get, h, json, startBadInputGateway } from './test-support/bad-input-gateway.js';
import { ACME_KEY } from './test-support/gateway-harness.js';
import {
  expectError,
  KNOWN_CODES,
  liveSocket,
  MAX_FRAME,
  nextReply,
  openSocket,
  send,
} from './test-support/http-probe.js';

startBadInputGateway();

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
