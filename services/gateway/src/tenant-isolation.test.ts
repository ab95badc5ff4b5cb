import {
  API_KEY_HEADER,
  CloseCode,
  ErrorBody,
  type Conversation,
  type CreatedApiKey,
  type ServerInfo,
} from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { deltaSubject, DEFAULT_SIGNAL_ROOT } from '@flotilla/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from './route-table.js';
import {
  ACME_KEY,
  ADMIN_KEY,
  CREATED_EVENTS,
  GLOBEX_KEY,
  startGatewayHarness,
  type GatewayHarness,
} from './test-support/gateway-harness.js';
import { openSocket, type Socket } from './test-support/http-probe.js';

type Method = RouteSpec['method'];
type Reply = { status: number; text: string; json: unknown; headers: Headers };

const SECRET_TITLE = 'Quarterly plan Zeppelin-7731';
const SECRET_TAG = 'tag-orchid-5520';
const SECRET_MESSAGE = 'the vault code is 8841-walrus';
const SECRET_TICK = 'agent says heliotrope-0912';

let h: GatewayHarness;
/** Acme's conversation that globex probes (its id names no tenant, so `acme` in a body is a leak). */
const target = `iso-target-${Date.now().toString(36)}`;
let targetEvents: Event[] = [];
let targetBefore: Conversation;
const globexOwn = `iso-globex-${Date.now().toString(36)}`;

beforeAll(async () => {
  h = await startGatewayHarness({ authTimeoutMs: 1_000 });
  const { conversation, created } = await h.acme.createConversation({
    id: target,
    title: SECRET_TITLE,
    tags: [SECRET_TAG],
    message: SECRET_MESSAGE,
  });
  expect(created).toBe(true);
  expect(conversation.title).toBe(SECRET_TITLE);
  await h.produce({ tenant: 'acme', conversation: target }, 3, SECRET_TICK);
  targetEvents = (await h.acme.searchEvents(target, { limit: 200 })).items;
  expect(targetEvents.length).toBeGreaterThanOrEqual(5);
  targetBefore = await h.acme.getConversation(target);
  await h.globex.createConversation({ id: globexOwn, title: 'globex own' });
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

async function request(
  method: Method | 'HEAD',
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {
    ...(options.key ? { [API_KEY_HEADER]: options.key } : {}),
    ...options.headers,
  };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${h.url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** Strings of acme's conversation that must never reach another tenant. */
function secrets(): string[] {
  return [
    SECRET_TITLE,
    SECRET_TAG,
    SECRET_MESSAGE,
    SECRET_TICK,
    'heliotrope',
    'walrus',
    'Zeppelin',
    'acme',
    ...targetEvents.map((event) => event.id),
  ];
}
function expectNoLeak(text: string, where: string): void {
  for (const secret of secrets())
    expect(text.includes(secret), `${where} leaks "${secret}": ${text.slice(0, 400)}`).toBe(false);
}

/** A valid body for each route that takes one (checked against the route's own schema). */
const BODIES: Record<string, unknown> = {
  updateConversation: { title: 'globex was here', tags: ['g'] },
  updateConversationSpec: { spec: { tools: ['finish'] }, reason: 'globex switches' },
  sendMessage: { text: 'hello from globex', run: true },
  runConversation: {},
  pauseConversation: { reason: 'globex pauses' },
  interruptConversation: { reason: 'globex interrupts' },
  condenseConversation: {},
  respondToConfirmation: { decision: 'reject', reason: 'globex says no' },
  setConversationSecret: { value: 'globex-secret-value' },
  forkConversation: { id: 'globex-fork', title: 'taken by globex' },
  rewindConversation: { to_seq: 1, reason: 'globex rewinds' },
  askConversation: { question: 'what does acme do?' },
};

/** The requests to make of a route with an `:id`, generated from the table. */
function requestsFor(spec: RouteSpec, id: string): { path: string; body?: unknown }[] {
  const base = spec.url.replace(':id', encodeURIComponent(id)).replace(':name', 'ISOLATION_TOKEN');
  const body = spec.body ? BODIES[spec.operationId] : undefined;
  if (spec.body) {
    expect(body, `no body for ${spec.operationId} in BODIES`).toBeDefined();
    expect(spec.body.safeParse(body).success, `BODIES.${spec.operationId} must be valid`).toBe(true);
  }
  if (base.includes(':event')) {
    const keys = ['1', String(targetEvents.length), ...targetEvents.slice(0, 3).map((event) => event.id)];
    return keys.map((key) => ({ path: base.replace(':event', encodeURIComponent(key)) }));
  }
  const paths = [base];
  if (spec.operationId === 'searchEvents')
    paths.push(
      `${base}?order=desc&limit=1`,
      `${base}?text=${encodeURIComponent(SECRET_MESSAGE)}`,
      `${base}?after_seq=0&type=message`,
    );
  if (spec.operationId === 'countEvents') paths.push(`${base}?text=walrus`, `${base}?source=agent`);
  // a file's routes name it
  if (spec.operationId === 'downloadFile' || spec.operationId === 'uploadFile') paths[0] = `${base}?path=notes.txt`;
  return paths.map((path) => (body !== undefined ? { path, body } : { path }));
}

/** The routes of one conversation (webhooks have ids of their own, which tenant-scoped lookups check apart). */
const idRoutes = (): RouteSpec[] => h.gateway.routes.filter((spec) => spec.url.includes('/conversations/:id'));
/** Routes another service answers (a step worker a question, a tool runner the workspace): none runs beside this harness, so theirs is the documented 503. */
const ANSWERED_ELSEWHERE: ReadonlySet<string> = new Set([
  'askConversation',
  'listFiles',
  'downloadFile',
  'uploadFile',
  'getGitStatus',
  'getGitDiff',
]);

describe("globex cannot reach acme's conversation", () => {
  it('the route table has the id routes this test expects', () => {
    const ids = idRoutes().map((spec) => spec.operationId);
    expect(ids.length).toBeGreaterThanOrEqual(13);
    for (const operationId of Object.keys(BODIES)) expect(ids).toContain(operationId);
  });

  it('every id route answers globex 404 conversation_not_found, the same as for an id that never existed, and leaks nothing', async () => {
    const never = `iso-nobody-${'x'.repeat(target.length - 'iso-nobody-'.length)}`.slice(0, target.length);
    let count = 0;
    for (const spec of idRoutes()) {
      for (const { path, body } of requestsFor(spec, target)) {
        const where = `globex ${spec.method} ${path}`;
        const reply = await request(spec.method, path, { key: GLOBEX_KEY, ...(body !== undefined ? { body } : {}) });
        expect(reply.status, `${where} → ${reply.text}`).toBe(404);
        expect(ErrorBody.parse(reply.json).error.code, where).toBe('conversation_not_found');
        expectNoLeak(reply.text, where);
        // no existence oracle: the answer for acme's id is the answer for an id nobody has
        const control = await request(spec.method, path.replace(target, never), {
          key: GLOBEX_KEY,
          ...(body !== undefined ? { body } : {}),
        });
        expect(control.status, where).toBe(404);
        expect(control.text.replaceAll(never, target), where).toBe(reply.text);
        count += 1;
      }
    }
    expect(count).toBeGreaterThanOrEqual(20);
  });

  it("acme's conversation is untouched by globex's writes, and acme's own requests succeed", async () => {
    const after = await h.acme.getConversation(target);
    expect(after).toEqual(targetBefore);
    const events = (await h.acme.searchEvents(target, { limit: 200 })).items;
    expect(events).toEqual(targetEvents);
    // positive control: the same generated requests are well-formed (acme, on a fresh conversation of its own)
    for (const spec of idRoutes()) {
      const { conversation } = await h.acme.createConversation({ title: 'control', message: 'control message' });
      if (spec.operationId === 'removeConversationSecret')
        await h.acme.setConversationSecret(conversation.id, 'ISOLATION_TOKEN', 'acme-secret-value');
      for (const { path, body } of requestsFor(spec, conversation.id)) {
        if (path.includes('/events/') && !/\/events\/(1|count)(\?|$)/.test(path)) continue; // event keys of the target, not this one
        const reply = await request(spec.method, path, { key: ACME_KEY, ...(body !== undefined ? { body } : {}) });
        const where = `acme ${spec.method} ${path} → ${reply.status} ${reply.text.slice(0, 200)}`;
        expect(reply.status, where).not.toBe(404);
        expect(reply.status, where).not.toBe(400);
        if (ANSWERED_ELSEWHERE.has(spec.operationId) && reply.status === 503) {
          expect(ErrorBody.parse(reply.json).error.code, where).toBe('unavailable');
          continue;
        }
        expect(reply.status, where).toBeLessThan(500);
        if (reply.status >= 400)
          expect(['not_waiting', 'nothing_pending', 'conflict', 'already_running', 'conversation_running']).toContain(
            ErrorBody.parse(reply.json).error.code,
          );
      }
    }
  });

  it("acme's event keys (seq and id) answer acme, and conversation_not_found (never event_not_found) to globex", async () => {
    const event = targetEvents[1]!;
    expect((await h.acme.getEvent(target, event.id)).seq).toBe(event.seq);
    expect((await h.acme.getEvent(target, event.seq)).id).toBe(event.id);
    for (const key of [event.id, String(event.seq), '999']) {
      const reply = await request('GET', `/v1/conversations/${target}/events/${encodeURIComponent(key)}`, {
        key: GLOBEX_KEY,
      });
      expect(reply.status).toBe(404);
      expect(ErrorBody.parse(reply.json).error.code).toBe('conversation_not_found');
    }
  });
});

describe('lists, counts and batches are per tenant', () => {
  it("globex's list, count and batch never include acme's conversation", async () => {
    const globexIds: string[] = [];
    for await (const conversation of h.globex.allConversations({ limit: 1 })) globexIds.push(conversation.id);
    expect(globexIds).toContain(globexOwn);
    expect(globexIds).not.toContain(target);
    expect(await h.globex.countConversations()).toBe(globexIds.length);
    expect(await h.globex.countConversations({ status: 'idle' })).toBeLessThanOrEqual(globexIds.length);
    for (const sort of ['created_at', '-created_at', 'updated_at', '-updated_at'] as const) {
      const reply = await request('GET', `/v1/conversations?sort=${sort}&limit=200`, { key: GLOBEX_KEY });
      expect(reply.status).toBe(200);
      expectNoLeak(reply.text, `globex list sort=${sort}`);
    }
    const batch = await request('GET', `/v1/conversations/batch?ids=${target},${globexOwn}`, { key: GLOBEX_KEY });
    expect(batch.status).toBe(200);
    const items = (batch.json as { items: (Conversation | null)[] }).items;
    expect(items[0]).toBeNull();
    expect(items[1]?.id).toBe(globexOwn);
    expectNoLeak(batch.text, 'globex batch');
  });

  it("acme's list, count and batch do include it (the control), and an acme cursor shows globex nothing of acme's", async () => {
    const acmeIds: string[] = [];
    for await (const conversation of h.acme.allConversations({ limit: 2 })) acmeIds.push(conversation.id);
    expect(acmeIds).toContain(target);
    expect(acmeIds).not.toContain(globexOwn);
    expect(await h.acme.countConversations()).toBe(acmeIds.length);
    const batch = await h.acme.batchGetConversations([target, globexOwn]);
    expect(batch.items[0]?.title).toBe(SECRET_TITLE);
    expect(batch.items[1]).toBeNull();

    const page = await h.acme.listConversations({ limit: 1, sort: 'created_at' });
    expect(page.next_cursor).not.toBeNull();
    const reply = await request('GET', `/v1/conversations?sort=created_at&cursor=${page.next_cursor!}`, {
      key: GLOBEX_KEY,
    });
    expect(reply.status).toBeLessThan(500);
    expectNoLeak(reply.text, 'globex list with an acme cursor');
  });
});

describe('the event WebSocket is per tenant', () => {
  const path = () => `/v1/conversations/${target}/events`;

  it("globex's auth frame on acme's conversation closes the socket with 4004 and sends nothing", async () => {
    const s = openSocket(h, path(), { auth: { frame: GLOBEX_KEY } });
    await s.opened;
    const { code } = await s.closed;
    expect(code).toBe(CloseCode.NotFound);
    expect(s.frames).toEqual([]);
  });

  it("globex's key in the upgrade's header closes with 4004 too", async () => {
    const s = openSocket(h, path(), { auth: { header: GLOBEX_KEY }, afterSeq: 0 });
    const { code, reason } = await s.closed;
    expect(code).toBe(CloseCode.NotFound);
    expect(s.frames).toEqual([]);
    expectNoLeak(reason, 'close reason');
  });

  it("acme's auth frame receives sync first, then acme's events", async () => {
    const s = openSocket(h, path(), { auth: { frame: ACME_KEY } });
    await s.opened;
    const sync = await s.frame(0);
    expect(sync).toMatchObject({ type: 'sync', conversation: target, after_seq: 0, last_seq: targetEvents.length });
    const last = await s.frame(targetEvents.length);
    expect(last).toMatchObject({ type: 'event', seq: targetEvents.length });
    expect(
      s.frames.slice(1, targetEvents.length + 1).map((frame) => (frame.type === 'event' ? frame.event.id : frame.type)),
    ).toEqual(targetEvents.map((event) => event.id));
    expect(await s.frame(targetEvents.length + 1)).toEqual({ type: 'live', last_seq: targetEvents.length });
    s.socket.close(1000);
    await s.closed;
  });

  it('a first frame that is not an auth frame closes with 4001', async () => {
    const s = openSocket(h, path());
    await s.opened;
    s.socket.send(JSON.stringify({ type: 'ping', id: 'p1' }));
    expect((await s.closed).code).toBe(CloseCode.Unauthorized);
    expect(s.frames).toEqual([]);
  });

  it('an unknown key in the auth frame closes with 4001, and so does silence', async () => {
    const bad = openSocket(h, path(), { auth: { frame: 'not-a-key-0123456789' } });
    await bad.opened;
    expect((await bad.closed).code).toBe(CloseCode.Unauthorized);
    expect(bad.frames).toEqual([]);
    const silent = openSocket(h, path());
    await silent.opened;
    expect((await silent.closed).code).toBe(CloseCode.Unauthorized); // authTimeoutMs is 1 s here
    expect(silent.frames).toEqual([]);
  });

  it('an unknown key in the upgrade header is closed with 4001, as an unknown key in the auth frame is', async () => {
    const s = openSocket(h, path(), { auth: { header: 'not-a-key-0123456789' } });
    expect((await s.closed).code).toBe(CloseCode.Unauthorized);
    expect(s.frames).toEqual([]);
  });
});

describe('authentication and the admin route', () => {
  const tenantRoutes = (): RouteSpec[] => h.gateway.routes.filter((spec) => spec.access === 'tenant');

  it('without a key, or with an unknown one, every tenant route answers 401 unauthorized', async () => {
    for (const spec of tenantRoutes()) {
      const path = spec.url.replace(':id', target).replace(':event', '1').replace(':name', 'ISOLATION_TOKEN');
      const body = spec.body ? (BODIES[spec.operationId] ?? {}) : undefined;
      const attempts: Record<string, string>[] = [
        {},
        { [API_KEY_HEADER]: 'not-a-key-0123456789' },
        { authorization: 'Bearer not-a-key-0123456789' },
        { authorization: 'Basic YWNtZTphY21l' },
      ];
      for (const headers of attempts) {
        const reply = await request(spec.method, path, { headers, ...(body !== undefined ? { body } : {}) });
        const where = `${spec.method} ${path} ${JSON.stringify(headers)}`;
        expect(reply.status, where).toBe(401);
        expect(ErrorBody.parse(reply.json).error.code, where).toBe('unauthorized');
        expectNoLeak(reply.text, where);
      }
    }
  });

  it('the admin key is not a tenant key', async () => {
    const reply = await request('GET', `/v1/conversations/${target}`, { key: ADMIN_KEY });
    expect(reply.status).toBe(401);
    expectNoLeak(reply.text, 'admin on a tenant route');
  });

  it('Authorization: Bearer works like x-api-key', async () => {
    const reply = await request('GET', '/v1/server-info', { headers: { authorization: `Bearer ${GLOBEX_KEY}` } });
    expect(reply.status).toBe(200);
    expect((reply.json as ServerInfo).tenant).toBe('globex');
  });

  it('a tenant key on POST /v1/admin/api-keys is 403 forbidden; no key is 401', async () => {
    for (const key of [ACME_KEY, GLOBEX_KEY]) {
      const reply = await request('POST', '/v1/admin/api-keys', { key, body: { tenant: 'acme', name: 'stolen' } });
      expect(reply.status).toBe(403);
      expect(ErrorBody.parse(reply.json).error.code).toBe('forbidden');
      expect(reply.text).not.toMatch(/flt_/);
    }
    const anonymous = await request('POST', '/v1/admin/api-keys', { body: { tenant: 'acme', name: 'stolen' } });
    expect(anonymous.status).toBe(401);
    expect(ErrorBody.parse(anonymous.json).error.code).toBe('unauthorized');
  });

  it('the admin key mints a key that works for its tenant only', async () => {
    const minted = await request('POST', '/v1/admin/api-keys', {
      key: ADMIN_KEY,
      body: { tenant: 'initech', name: 'isolation test' },
    });
    expect(minted.status).toBe(201);
    const { api_key: key, tenant } = minted.json as CreatedApiKey;
    expect(tenant).toBe('initech');
    expect(key).toMatch(/^flt_/);
    const initech = h.client(key);
    expect((await initech.serverInfo()).tenant).toBe('initech');
    const { conversation } = await initech.createConversation({ title: 'initech own' });
    expect((await initech.getConversation(conversation.id)).title).toBe('initech own');
    expect((await initech.listConversations()).items.map((item) => item.id)).toEqual([conversation.id]);
    const denied = await request('GET', `/v1/conversations/${target}`, { key });
    expect(denied.status).toBe(404);
    expect(ErrorBody.parse(denied.json).error.code).toBe('conversation_not_found');
    // ... and acme does not see initech's
    const other = await request('GET', `/v1/conversations/${conversation.id}`, { key: ACME_KEY });
    expect(other.status).toBe(404);

    const forAcme = await h.client(ADMIN_KEY).createApiKey('acme', 'second acme key');
    expect((await h.client(forAcme.api_key).getConversation(target)).title).toBe(SECRET_TITLE);
  });
});

// Last: globex now gets a conversation of its own under acme's id.
describe('the same id in two tenants names two conversations', () => {
  it("creating acme's id as globex makes globex's own; live events and deltas stay in their tenant; deleting it leaves acme's", async () => {
    const twin = await request('POST', '/v1/conversations', {
      key: GLOBEX_KEY,
      body: { id: target, title: 'globex twin' },
    });
    expect(twin.status, twin.text).toBe(201);
    expect(twin.json).toMatchObject({ id: target, title: 'globex twin', last_seq: CREATED_EVENTS });
    expectNoLeak(twin.text.replaceAll(target, '<id>'), 'the twin');
    expect((await h.acme.getConversation(target)).title).toBe(SECRET_TITLE);

    const live = async (key: string): Promise<Socket> => {
      const s = openSocket(h, `/v1/conversations/${target}/events`, { auth: { frame: key } });
      await s.opened;
      for (let index = 0; !s.frames.some((frame) => frame.type === 'live'); index += 1) await s.frame(index);
      return s;
    };
    const globexSocket = await live(GLOBEX_KEY);
    expect(globexSocket.frames[0]).toMatchObject({ type: 'sync', conversation: target, last_seq: CREATED_EVENTS });
    const acmeSocket = await live(ACME_KEY);
    expect(acmeSocket.frames[0]).toMatchObject({ type: 'sync', conversation: target, last_seq: targetEvents.length });

    await h.produce({ tenant: 'acme', conversation: target }, 1, `${SECRET_TICK} live`);
    h.nc.publish(
      deltaSubject(DEFAULT_SIGNAL_ROOT, { tenant: 'acme', conversation: target }),
      JSON.stringify({ type: 'text', text: `${SECRET_TICK} delta` }),
    );
    const deadline = Date.now() + 5_000;
    while (
      !acmeSocket.frames.some((frame) => frame.type === 'event' && frame.seq === targetEvents.length + 1) ||
      !acmeSocket.frames.some((frame) => frame.type === 'delta')
    ) {
      if (Date.now() > deadline)
        throw new Error(`acme's socket got ${JSON.stringify(acmeSocket.frames.map((frame) => frame.type))}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // globex's socket answers a ping after those: it saw nothing of acme's in between
    globexSocket.socket.send(JSON.stringify({ type: 'ping', id: 'after' }));
    for (let index = 0; !globexSocket.frames.some((frame) => frame.type === 'ack'); index += 1)
      await globexSocket.frame(index);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(globexSocket.frames.map((frame) => frame.type)).toEqual([
      'sync',
      ...Array<string>(CREATED_EVENTS).fill('event'),
      'live',
      'ack',
    ]);
    expectNoLeak(JSON.stringify(globexSocket.frames).replaceAll(target, '<id>'), "globex's socket");

    globexSocket.socket.close(1000);
    acmeSocket.socket.close(1000);
    await Promise.all([globexSocket.closed, acmeSocket.closed]);
    expect((await request('DELETE', `/v1/conversations/${target}`, { key: GLOBEX_KEY })).status).toBe(204);
    const still = await h.acme.getConversation(target);
    expect(still.title).toBe(SECRET_TITLE);
    expect(still.last_seq).toBe(targetEvents.length + 1);
  });
});
