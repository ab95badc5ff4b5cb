import { randomBytes } from 'node:crypto';
import { MAX_SECRET_VALUE_CHARS, type ServerInfo } from '@flotilla/api';
import type { FlotillaApiError } from '@flotilla/client';
import { CURRENT_PROTOCOL_VERSION, type Event } from '@flotilla/events';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, GLOBEX_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import {
  expectError,
  expectIssue,
  liveSocket,
  nextReply,
  send,
  sendJson,
  type Reply,
} from './test-support/http-probe.js';

/** Values no response, event, frame or log line may ever hold. */
const VALUE = 'ghp_Sup3rS3cretValue_4817_zebra';
const DEFAULT_VALUE = 'npm_TenantDefault_9921_okapi';
const REPLACED = 'ghp_Replaced_Value_5530_ibis';

let h: GatewayHarness;
const logLines: string[] = [];
let conversation: string;

beforeAll(async () => {
  h = await startGatewayHarness(
    { rateLimitPerSecond: 0 },
    { logDestination: { write: (line: string) => void logLines.push(line) } },
  );
  conversation = (await h.acme.createConversation({ title: 'secrets', message: 'hello' })).conversation.id;
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

const put = (url: string, body: unknown, key = ACME_KEY): Promise<Reply> => sendJson(h, 'PUT', url, body, key);
const del = (url: string, key = ACME_KEY): Promise<Reply> => send(h, { method: 'DELETE', url, key });
const get = (url: string, key = ACME_KEY): Promise<Reply> => send(h, { method: 'GET', url, key });
const secretsOf = (id: string): string => `/v1/conversations/${id}/secrets`;

/** Each value and the forms it could leak in. */
function forms(value: string): string[] {
  return [value, Buffer.from(value).toString('base64').slice(0, 24), value.slice(4, 20)];
}
function expectNoValue(text: string, where: string, values = [VALUE, DEFAULT_VALUE, REPLACED]): void {
  for (const value of values)
    for (const form of forms(value))
      expect(text.includes(form), `${where} holds (part of) a secret value: ${text.slice(0, 300)}`).toBe(false);
}

/** Every message of a stream, subject, headers and body, as one text. */
async function streamText(stream: string): Promise<string> {
  const jsm = await jetstreamManager(h.nc);
  const { state } = (await jsm.streams.info(stream)) as { state: { first_seq: number; last_seq: number } };
  const parts: string[] = [];
  for (let seq = state.first_seq; seq <= state.last_seq; seq += 1) {
    const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (message)
      parts.push(
        message.subject,
        message.header ? [...message.header.keys()].map((key) => `${key}:${message.header!.get(key)}`).join(',') : '',
        Buffer.from(message.data).toString('latin1'),
      );
  }
  return parts.join('\n');
}

describe('conversation secrets over REST', () => {
  it('set → 204 with no body; the list shows the name only; the store holds the value for the sandbox', async () => {
    const reply = await put(`${secretsOf(conversation)}/GITHUB_TOKEN`, { value: VALUE });
    expect(reply.status, reply.text).toBe(204);
    expect(reply.text).toBe('');
    const listed = await get(secretsOf(conversation));
    expect(listed.status).toBe(200);
    expect(listed.json).toEqual({ names: ['GITHUB_TOKEN'] });
    expect(await h.acme.listConversationSecrets(conversation)).toEqual(['GITHUB_TOKEN']);
    expect(await h.secretReader!.reveal({ tenant: 'acme', conversation })).toEqual({ GITHUB_TOKEN: VALUE });
  });

  it('appends secret_changed (set, then removed) to the log, without the value', async () => {
    const id = (await h.acme.createConversation({ title: 'events' })).conversation.id;
    await h.acme.setConversationSecret(id, 'API_TOKEN', VALUE);
    await h.acme.setConversationSecret(id, 'API_TOKEN', REPLACED);
    await h.acme.removeConversationSecret(id, 'API_TOKEN');
    const events = (await h.acme.searchEvents(id, { type: 'secret_changed' })).items;
    expect(
      events.map((event) => [
        event.type,
        event.source,
        (event as Extract<Event, { type: 'secret_changed' }>).name,
        (event as Extract<Event, { type: 'secret_changed' }>).action,
        event.v,
      ]),
    ).toEqual([
      ['secret_changed', 'user', 'API_TOKEN', 'set', 2],
      ['secret_changed', 'user', 'API_TOKEN', 'set', 2],
      ['secret_changed', 'user', 'API_TOKEN', 'removed', 2],
    ]);
    expect(await h.acme.listConversationSecrets(id)).toEqual([]);
    const conversationNow = await h.acme.getConversation(id);
    // created (its state and its agent spec), then the three changes
    expect(conversationNow.last_seq).toBe(5);
  });

  it('remove → 204, then 404 secret_not_found; an unknown conversation is 404 conversation_not_found', async () => {
    const id = (await h.acme.createConversation({ title: 'remove' })).conversation.id;
    await h.acme.setConversationSecret(id, 'ONE_TOKEN', VALUE);
    expect((await del(`${secretsOf(id)}/ONE_TOKEN`)).status).toBe(204);
    const again = expectError(await del(`${secretsOf(id)}/ONE_TOKEN`), 404, 'secret_not_found');
    expect(again.message).toContain('ONE_TOKEN');
    expect((await h.acme.searchEvents(id, { type: 'secret_changed' })).items).toHaveLength(2);
    for (const reply of [
      await put(`${secretsOf('nobody-here')}/ONE_TOKEN`, { value: VALUE }),
      await del(`${secretsOf('nobody-here')}/ONE_TOKEN`),
      await get(secretsOf('nobody-here')),
    ]) {
      expectError(reply, 404, 'conversation_not_found');
      expectNoValue(reply.text, 'a 404');
    }
    expect(await h.secrets!.names({ tenant: 'acme', conversation: 'nobody-here' })).toEqual([]);
    await expect(h.acme.removeConversationSecret(id, 'NEVER_SET')).rejects.toMatchObject({
      status: 404,
      code: 'secret_not_found',
    } satisfies Partial<FlotillaApiError>);
  });

  it('bad names and values are 400 with a clear message that never echoes the value', async () => {
    const url = `${secretsOf(conversation)}/GOOD_NAME`;
    const cases: [Reply, string, RegExp][] = [
      [await put(url, { value: 'abc' }), 'body.value', /at least 4 characters \(shorter ones would mask ordinary text/],
      [await put(url, { value: '' }), 'body.value', /at least 4 characters/],
      [await put(url, { value: 'x'.repeat(MAX_SECRET_VALUE_CHARS + 1) }), 'body.value', /at most 65536/],
      [await put(url, { value: `${VALUE}\u0000` }), 'body.value', /NUL/],
      [await put(url, { value: 12345678 }), 'body.value', /is a string/],
      [await put(url, {}), 'body.value', /is a string/],
      [await put(`${secretsOf(conversation)}/lower_case`, { value: VALUE }), 'params.name', /A-Z 0-9 _/],
      [await put(`${secretsOf(conversation)}/1ABC`, { value: VALUE }), 'params.name', /not starting with a digit/],
      [
        await put(`${secretsOf(conversation)}/${encodeURIComponent(VALUE)}`, { value: VALUE }),
        'params.name',
        /A-Z 0-9 _/,
      ],
      [
        await put(`${secretsOf(conversation)}/PATH`, { value: VALUE }),
        'params.name',
        /PATH is set by the sandbox itself/,
      ],
      [
        await put(`${secretsOf(conversation)}/LD_PRELOAD`, { value: VALUE }),
        'params.name',
        /starting with LD_ are reserved/,
      ],
      [
        await put(`${secretsOf(conversation)}/FLOTILLA_SECRETS_KEY`, { value: VALUE }),
        'params.name',
        /starting with FLOTILLA_ are reserved/,
      ],
      [await put('/v1/secrets/HOME', { value: VALUE }), 'params.name', /HOME is set by the sandbox itself/],
      [await put('/v1/secrets/GOOD_NAME', { value: 'abc' }), 'body.value', /at least 4 characters/],
    ];
    for (const [reply, path, message] of cases) {
      expectIssue(reply, path, `${path} ${message}`);
      expect(reply.text).toMatch(message);
      expectNoValue(reply.text, `the 400 for ${path}`);
      expect(reply.text).not.toContain('abc"');
    }
    const extra = await put(url, { value: VALUE, note: 'x' });
    expectError(extra, 400, 'validation_failed');
    expectNoValue(extra.text, 'an unknown field');
    const broken = await send(h, {
      method: 'PUT',
      url,
      key: ACME_KEY,
      payload: `{"value": "${VALUE}"`,
      contentType: 'application/json',
    });
    expectError(broken, 400, 'invalid_json');
    expectNoValue(broken.text, 'invalid JSON');
    expect(await h.acme.listConversationSecrets(conversation)).not.toContain('GOOD_NAME');
  });
});

describe('tenant defaults', () => {
  it('are set, listed and removed apart from conversations, and the sandbox gets them under its own', async () => {
    expect((await put('/v1/secrets/NPM_TOKEN', { value: DEFAULT_VALUE })).status).toBe(204);
    expect((await put('/v1/secrets/GITHUB_TOKEN', { value: DEFAULT_VALUE })).status).toBe(204);
    expect((await get('/v1/secrets')).json).toEqual({ names: ['GITHUB_TOKEN', 'NPM_TOKEN'] });
    expect(await h.acme.listTenantSecrets()).toEqual(['GITHUB_TOKEN', 'NPM_TOKEN']);
    // the conversation's own GITHUB_TOKEN wins over the default
    expect(await h.secretReader!.reveal({ tenant: 'acme', conversation })).toEqual({
      GITHUB_TOKEN: VALUE,
      NPM_TOKEN: DEFAULT_VALUE,
    });
    expect(await h.acme.listConversationSecrets(conversation)).toEqual(['GITHUB_TOKEN']);
    await h.acme.removeTenantSecret('GITHUB_TOKEN');
    expectError(await del('/v1/secrets/GITHUB_TOKEN'), 404, 'secret_not_found');
    expect(await h.acme.listTenantSecrets()).toEqual(['NPM_TOKEN']);
    // tenant defaults have no log: no conversation got an event
    expect(
      (await h.acme.searchEvents(conversation, { type: 'secret_changed' })).items.map(
        (event) => (event as { name: string }).name,
      ),
    ).toEqual(['GITHUB_TOKEN']);
  });
});

describe('tenant isolation', () => {
  it("globex can neither list, set nor remove acme's conversation secrets, and has its own defaults", async () => {
    for (const reply of [
      await get(secretsOf(conversation), GLOBEX_KEY),
      await put(`${secretsOf(conversation)}/GITHUB_TOKEN`, { value: 'globex-overwrites' }, GLOBEX_KEY),
      await del(`${secretsOf(conversation)}/GITHUB_TOKEN`, GLOBEX_KEY),
    ]) {
      expectError(reply, 404, 'conversation_not_found');
      expect(reply.text).not.toContain('GITHUB_TOKEN');
    }
    expect(await h.secretReader!.reveal({ tenant: 'acme', conversation })).toMatchObject({ GITHUB_TOKEN: VALUE });
    expect(await h.globex.listTenantSecrets()).toEqual([]);
    await h.globex.setTenantSecret('NPM_TOKEN', 'globex-own-default');
    expect(await h.globex.listTenantSecrets()).toEqual(['NPM_TOKEN']);
    expect(await h.secretReader!.reveal({ tenant: 'acme', conversation })).toMatchObject({ NPM_TOKEN: DEFAULT_VALUE });
    expect(await h.secretReader!.reveal({ tenant: 'globex', conversation })).toEqual({
      NPM_TOKEN: 'globex-own-default',
    });
  });

  it('the same conversation id in another tenant has its own secrets', async () => {
    await h.globex.createConversation({ id: conversation, title: 'globex twin' });
    expect(await h.globex.listConversationSecrets(conversation)).toEqual([]);
    await h.globex.setConversationSecret(conversation, 'TWIN_TOKEN', 'globex-twin-value');
    expect(await h.acme.listConversationSecrets(conversation)).toEqual(['GITHUB_TOKEN']);
    expect(await h.globex.listConversationSecrets(conversation)).toEqual(['TWIN_TOKEN']);
  });
});

describe('secrets over the WebSocket', () => {
  it('secret_set and secret_remove are acked like commands; frames carry the event, never the value', async () => {
    const id = (await h.acme.createConversation({ title: 'socket', message: 'hi' })).conversation.id;
    const s = await liveSocket(h, id);
    const from = s.frames.length;
    s.socket.send(JSON.stringify({ type: 'secret_set', id: 'set-1', name: 'SOCKET_TOKEN', value: VALUE }));
    const { frame: ack, index } = await nextReply(s, from);
    expect(ack).toMatchObject({ type: 'ack', id: 'set-1', appended: true, status: 'idle' });
    const seq = (ack as { last_seq: number }).last_seq;
    expect(await h.acme.listConversationSecrets(id)).toEqual(['SOCKET_TOKEN']);
    expect(await h.secretReader!.reveal({ tenant: 'acme', conversation: id })).toMatchObject({ SOCKET_TOKEN: VALUE });

    s.socket.send(JSON.stringify({ type: 'secret_set', id: 'short', name: 'SOCKET_TOKEN', value: 'abc' }));
    const { frame: refused, index: next } = await nextReply(s, index + 1);
    expect(refused).toMatchObject({
      type: 'error',
      id: 'short',
      code: 'validation_failed',
      message: expect.stringMatching(/value: a secret value needs at least 4 characters/),
    });
    s.socket.send(JSON.stringify({ type: 'secret_set', id: 'reserved', name: 'PATH', value: VALUE }));
    const { frame: reserved, index: after } = await nextReply(s, next + 1);
    expect(reserved).toMatchObject({
      type: 'error',
      id: 'reserved',
      code: 'validation_failed',
      message: expect.stringMatching(/PATH is set by the sandbox/),
    });

    s.socket.send(JSON.stringify({ type: 'secret_remove', id: 'rm-1', name: 'SOCKET_TOKEN' }));
    const { frame: removed, index: later } = await nextReply(s, after + 1);
    expect(removed).toMatchObject({ type: 'ack', id: 'rm-1', appended: true });
    s.socket.send(JSON.stringify({ type: 'secret_remove', id: 'rm-2', name: 'SOCKET_TOKEN' }));
    const { frame: missing } = await nextReply(s, later + 1);
    expect(missing).toMatchObject({ type: 'error', id: 'rm-2', code: 'secret_not_found' });

    const deadline = Date.now() + 5_000;
    while (s.frames.filter((frame) => frame.type === 'event' && frame.event.type === 'secret_changed').length < 2) {
      if (Date.now() > deadline)
        throw new Error(`no secret_changed frames: ${JSON.stringify(s.frames.map((frame) => frame.type))}`);
      await s.frame(s.frames.length, 5_000);
    }
    const events = s.frames.flatMap((frame) =>
      frame.type === 'event' && frame.event.type === 'secret_changed' ? [frame] : [],
    );
    expect(events.map((frame) => [frame.seq, frame.event])).toEqual([
      [seq, expect.objectContaining({ type: 'secret_changed', name: 'SOCKET_TOKEN', action: 'set' })],
      [seq + 1, expect.objectContaining({ type: 'secret_changed', name: 'SOCKET_TOKEN', action: 'removed' })],
    ]);
    expectNoValue(JSON.stringify(s.frames), 'the frames');
    s.socket.close(1000);
    await s.closed;
  });
});

describe('commands in the order they arrived', () => {
  it('secret_set, message, secret_remove sent back to back on one socket are logged in that order', async () => {
    for (let round = 0; round < 5; round += 1) {
      const id = (await h.acme.createConversation({ title: `order ${round}` })).conversation.id;
      const s = await liveSocket(h, id);
      s.socket.send(JSON.stringify({ type: 'secret_set', id: 'set', name: 'ORDER_TOKEN', value: VALUE }));
      s.socket.send(JSON.stringify({ type: 'message', id: 'msg', text: 'between the two' }));
      s.socket.send(JSON.stringify({ type: 'secret_remove', id: 'rm', name: 'ORDER_TOKEN' }));
      const acks = new Map<string, number>();
      for (let index = 0; acks.size < 3; index += 1) {
        const frame = await s.frame(index);
        if (frame.type === 'ack') acks.set(frame.id!, frame.last_seq);
        if (frame.type === 'error') throw new Error(JSON.stringify(frame));
      }
      expect([acks.get('set')! < acks.get('msg')!, acks.get('msg')! < acks.get('rm')!]).toEqual([true, true]);
      const { items: events } = await h.acme.searchEvents(id, { limit: 100 });
      const logged = events.flatMap((event) =>
        event.type === 'secret_changed' ? [`secret ${event.action}`] : event.type === 'message' ? ['message'] : [],
      );
      expect(logged).toEqual(['secret set', 'message', 'secret removed']);
      s.socket.close(1000);
      await s.closed;
    }
  });
});

describe('what the gateway keeps and says', () => {
  it('no value is in any stored event, snapshot, or gateway log line, and the bucket holds ciphertexts only', async () => {
    const id = (await h.acme.createConversation({ title: 'leak check' })).conversation.id;
    await h.acme.setConversationSecret(id, 'LEAK_TOKEN', VALUE);
    await h.acme.setConversationSecret(id, 'LEAK_TOKEN', REPLACED);
    await h.acme.setTenantSecret('LEAK_DEFAULT', DEFAULT_VALUE);
    // the replies a client reads
    for (const path of [
      `/v1/conversations/${id}`,
      `/v1/conversations/${id}/events`,
      `/v1/conversations/${id}/events/2`,
      `/v1/conversations/${id}/final-response`,
      secretsOf(id),
      '/v1/secrets',
      '/v1/conversations',
    ]) {
      const reply = await get(path);
      expect(reply.status, path).toBe(200);
      expectNoValue(reply.text, path);
    }
    const events = await streamText(h.log.streamName);
    expect(events).toContain('LEAK_TOKEN');
    expect(events).toContain('secret_changed');
    expectNoValue(events, 'the events stream');
    expectNoValue(await streamText('KV_flotilla_conversations'), 'the snapshot bucket');
    const bucket = await streamText(`KV_${h.secrets!.bucket}`);
    expect(bucket).toContain('acme.conversation.');
    expectNoValue(bucket, 'the secrets bucket');
    const names = await streamText(`KV_${h.secrets!.namesBucket}`);
    expect(names).toContain(`acme.conversation.${id}.LEAK_TOKEN`);
    expectNoValue(names, 'the secret names bucket');
    const logs = logLines.join('');
    expect(logs).toContain('tenant secret set');
    expectNoValue(logs, 'the gateway log');
  });

  it('server-info says secrets are available', async () => {
    const info = (await get('/v1/server-info')).json as ServerInfo;
    expect(info.capabilities.secrets).toBe(true);
    expect(info.protocol_version).toBe(CURRENT_PROTOCOL_VERSION);
  });

  it('removeConversationSecrets (the delete hook) removes every secret of one conversation', async () => {
    const id = (await h.acme.createConversation({ title: 'doomed' })).conversation.id;
    await h.acme.setConversationSecret(id, 'ONE_TOKEN', VALUE);
    await h.acme.setConversationSecret(id, 'TWO_TOKEN', VALUE);
    await h.gateway.secrets.removeConversationSecrets({ tenant: 'acme', conversation: id });
    expect(await h.acme.listConversationSecrets(id)).toEqual([]);
    expect(await h.acme.listConversationSecrets(conversation)).toEqual(['GITHUB_TOKEN']);
    expect(await h.acme.listTenantSecrets()).toContain('NPM_TOKEN');
  });
});

describe('a gateway without a secrets key', () => {
  let bare: GatewayHarness;
  beforeAll(async () => {
    bare = await startGatewayHarness({}, { secretsKey: null });
  });
  afterAll(async () => {
    await bare?.[Symbol.asyncDispose]();
  });

  it('answers every secrets route with 503 secrets_not_configured, saying what to set, and server-info says so', async () => {
    const id = (await bare.acme.createConversation({ title: 'no key' })).conversation.id;
    const base = `/v1/conversations/${id}/secrets`;
    for (const [method, url, body] of [
      ['GET', base, undefined],
      ['PUT', `${base}/SOME_TOKEN`, { value: VALUE }],
      ['DELETE', `${base}/SOME_TOKEN`, undefined],
      ['GET', '/v1/secrets', undefined],
      ['PUT', '/v1/secrets/SOME_TOKEN', { value: VALUE }],
      ['DELETE', '/v1/secrets/SOME_TOKEN', undefined],
    ] as const) {
      const reply =
        body === undefined ? await send(bare, { method, url, key: ACME_KEY }) : await sendJson(bare, method, url, body);
      const error = expectError(reply, 503, 'secrets_not_configured', `${method} ${url}`);
      expect(error.message).toContain('FLOTILLA_SECRETS_KEY_FILE');
      expectNoValue(reply.text, `${method} ${url}`);
    }
    expect(
      ((await send(bare, { method: 'GET', url: '/v1/server-info', key: ACME_KEY })).json as ServerInfo).capabilities
        .secrets,
    ).toBe(false);
    await bare.gateway.secrets.removeConversationSecrets({ tenant: 'acme', conversation: id }); // the delete hook is a no-op
  });
});

describe('the API and the store agree on values', () => {
  it('accept and refuse the same boundary values', async () => {
    const id = (await h.acme.createConversation({ title: 'bounds' })).conversation.id;
    for (const [value, ok] of [
      ['abcd', true],
      ['abc', false],
      ['x'.repeat(MAX_SECRET_VALUE_CHARS), true],
      ['x'.repeat(MAX_SECRET_VALUE_CHARS + 1), false],
      ['ab\u0000cd', false],
      ['ab\uD800cd', false],
      [randomBytes(12).toString('base64'), true],
    ] as const) {
      const reply = await put(`${secretsOf(id)}/BOUND_TOKEN`, { value });
      expect(reply.status, `${value.length} characters`).toBe(ok ? 204 : 400);
      const stored = await h.secrets!.set({ tenant: 'acme', conversation: id }, 'BOUND_TOKEN', value).then(
        () => true,
        () => false,
      );
      expect(stored, `the store on ${value.length} characters`).toBe(ok);
    }
  });
});
