import { ErrorBody, type ServerFrame } from '@flotilla/api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RouteSpec } from './route-table.js';
import {
  ACME_KEY,
  ADMIN_KEY,
  GLOBEX_KEY,
  startGatewayHarness,
  type GatewayHarness,
} from './test-support/gateway-harness.js';
import {
  KNOWN_CODES,
  liveSocket,
  MAX_BODY,
  nextReply,
  PROBE_CONFIG,
  seedConversation,
  send,
  sendJson,
  type Method,
  type Reply,
  type RequestSpec,
} from './test-support/http-probe.js';

let h: GatewayHarness;
/** An acme conversation with a handful of events. */
let conversation: string;
let eventIds: string[] = [];

beforeAll(async () => {
  h = await startGatewayHarness(PROBE_CONFIG);
  ({ conversation, eventIds } = await seedConversation(h, 'fuzz'));
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

const json = (method: Method, url: string, body: unknown, key: string = ACME_KEY): Promise<Reply> =>
  sendJson(h, method, url, body, key);
const get = (url: string, key: string = ACME_KEY): Promise<Reply> => send(h, { method: 'GET', url, key });

// ── the fuzz: requests generated from the route table, and random socket frames ───────────────

type OpenApiOperation = {
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
};
type OpenApiPaths = { paths: Record<string, Record<string, OpenApiOperation>> };
type Stats = { requests: number; statuses: Map<number, number>; violations: Map<string, string> };

/** The keys a JSON schema's objects name (through anyOf/oneOf), for bodies that look almost right. */
function keysOf(schema: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) keysOf(item, into);
  else if (schema && typeof schema === 'object') {
    const object = schema as Record<string, unknown>;
    if (object['properties'] && typeof object['properties'] === 'object')
      for (const key of Object.keys(object['properties'])) into.add(key);
    for (const [key, value] of Object.entries(object)) if (key !== 'properties') keysOf(value, into);
    if (object['properties']) for (const value of Object.values(object['properties'] as object)) keysOf(value, into);
  }
  return into;
}

/** A request's outcome against the contract: < 500, and a JSON error body with a known code for every 4xx. */
function check(stats: Stats, request: RequestSpec, reply: Reply): void {
  stats.requests += 1;
  stats.statuses.set(reply.status, (stats.statuses.get(reply.status) ?? 0) + 1);
  const record = (kind: string): void => {
    if (!stats.violations.has(kind))
      stats.violations.set(
        kind,
        `${request.method} ${request.url} ${request.contentType ?? ''} ${JSON.stringify(request.payload?.slice(0, 200) ?? null)} → ${reply.status} ${reply.text.slice(0, 300)}`,
      );
  };
  // the workspace routes are answered by a tool runner and a side question by a step worker, neither of which this harness runs: for a
  // well-formed request theirs is the documented 503 unavailable (a HEAD's answer has the GET's status and no body to read the code from)
  const unavailableCode =
    request.method === 'HEAD' || (reply.json as ErrorBody | undefined)?.error?.code === 'unavailable';
  const noAnswerer =
    reply.status === 503 && /^\/v1\/conversations\/[^/?]+\/(files|git|ask)\b/.test(request.url) && unavailableCode;
  if (reply.status >= 500 && !noAnswerer) record(`status ${reply.status}`);
  if (reply.status >= 400 && request.method !== 'HEAD') {
    const parsed = ErrorBody.safeParse(reply.json);
    if (!parsed.success) record(`status ${reply.status} without an ErrorBody (${reply.text.slice(0, 60)})`);
    else if (!KNOWN_CODES.has(parsed.data.error.code)) record(`unknown code ${parsed.data.error.code}`);
  }
}

describe('fuzz', () => {
  it(
    'no generated request gets a 5xx or an error without a stable code; the gateway stays ready',
    { timeout: 240_000 },
    async () => {
      const routes = h.gateway.routes;
      const document = h.gateway.openapi as unknown as OpenApiPaths;
      const operation = (spec: RouteSpec) =>
        document.paths[spec.url.replace(/:([A-Za-z_]+)/g, '{$1}')]![spec.method.toLowerCase()]!;
      const queryKeys = (spec: RouteSpec): string[] =>
        (operation(spec).parameters ?? [])
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => parameter.name);
      const bodyKeys = (spec: RouteSpec): string[] => [
        ...keysOf(operation(spec).requestBody?.content['application/json']?.schema),
      ];
      const stats: Stats = { requests: 0, statuses: new Map(), violations: new Map() };
      const seed = Number(process.env['FUZZ_SEED'] ?? Date.now() % 2 ** 31); // rerun a failure with FUZZ_SEED=<seed>

      // ids: existing (several states), deleted, valid but unknown, invalid
      const ids: string[] = [conversation];
      for (let index = 0; index < 3; index += 1)
        ids.push((await h.acme.createConversation({ title: `fuzz ${index}`, message: 'go' })).conversation.id);
      const deleted = (await h.acme.createConversation({ title: 'deleted' })).conversation.id;
      await h.acme.deleteConversation(deleted);
      const segment = fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...ids) },
        { weight: 1, arbitrary: fc.constant(deleted) },
        { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) },
        { weight: 2, arbitrary: fc.string({ maxLength: 80, unit: 'binary' }).map(encodeURIComponent) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            'a.b',
            'a'.repeat(65),
            '..',
            '.',
            '%2F',
            '%2e%2e',
            '%00',
            'count',
            'batch',
            '%20',
            'a;b',
            '%ZZ',
            '%',
            '%E0%A4%A',
          ),
        },
      );
      const eventKey = fc.oneof(
        fc.nat({ max: 12 }).map(String),
        fc.constantFrom(
          ...eventIds.slice(0, 4),
          'count',
          '-1',
          '1e3',
          '999999999999999',
          '9999999999999999',
          'x'.repeat(129),
        ),
        fc.string({ maxLength: 40, unit: 'binary' }).map(encodeURIComponent),
      );
      const scalar = fc.oneof(
        fc.constantFrom(
          '',
          '0',
          '1',
          '-1',
          '2',
          '50',
          '200',
          '201',
          'abc',
          'asc',
          'desc',
          'idle',
          'running',
          'paused',
          'message',
          'user',
          'agent',
          'message,action',
          '2026-01-01T00:00:00Z',
          'true',
          'null',
          'a,b',
        ),
        fc.constantFrom(
          'created_at',
          '-created_at',
          'updated_at',
          '-updated_at',
          'state_change',
          ...ids.slice(0, 2),
          ids.join(','),
          '1.5',
          '1e2',
          '0x10',
          ' 1',
        ),
        fc.integer().map(String),
        fc.string({ maxLength: 30, unit: 'binary' }),
        fc.base64String({ maxLength: 60 }),
      );
      const query = (spec: RouteSpec) =>
        fc
          .array(
            fc.tuple(
              fc.oneof(
                { weight: 4, arbitrary: fc.constantFrom('limit', ...queryKeys(spec)) },
                { weight: 1, arbitrary: fc.constantFrom('x', '__proto__', 'constructor', 'ids[]', 'limit[]') },
              ),
              scalar,
            ),
            { maxLength: 4 },
          )
          .map((pairs) => (pairs.length === 0 ? '' : `?${new URLSearchParams(pairs).toString()}`));
      const jsonish: fc.Arbitrary<unknown> = fc.oneof(
        fc.constantFrom(
          null,
          true,
          false,
          0,
          -1,
          1.5,
          '',
          'x',
          'approve',
          'reject',
          'idle',
          [],
          {},
          ['a'],
          'x'.repeat(300),
        ),
        fc.string({ maxLength: 40, unit: 'binary' }),
        fc.integer(),
        fc.double(),
        fc.jsonValue({ maxDepth: 2 }),
      );
      const body = (spec: RouteSpec) =>
        fc.oneof(
          { weight: 1, arbitrary: fc.constant<{ payload?: string; contentType?: string }>({}) },
          {
            weight: 5,
            arbitrary: fc
              .dictionary(
                fc.oneof(
                  { weight: 5, arbitrary: fc.constantFrom('text', ...bodyKeys(spec)) },
                  { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
                ),
                jsonish,
                { maxKeys: 4 },
              )
              .map((object) => ({ payload: JSON.stringify(object), contentType: 'application/json' })),
          },
          {
            weight: 1,
            arbitrary: fc
              .jsonValue({ maxDepth: 3 })
              .map((value) => ({ payload: JSON.stringify(value), contentType: 'application/json' })),
          },
          {
            weight: 2,
            arbitrary: fc
              .tuple(
                fc.string({ maxLength: 200, unit: 'binary' }),
                fc.constantFrom(
                  'application/json',
                  'application/json; charset=utf-8',
                  'application/json; charset=latin1',
                  'text/plain',
                  'application/x-www-form-urlencoded',
                  'multipart/form-data',
                  'application/octet-stream',
                  '',
                  'application/json, text/plain',
                  'json',
                ),
              )
              .map(([payload, contentType]) => ({ payload, contentType })),
          },
          {
            weight: 1,
            arbitrary: fc.constant({
              payload: JSON.stringify({ text: 'x'.repeat(MAX_BODY) }),
              contentType: 'application/json',
            }),
          },
        );
      const key = fc.oneof(
        { weight: 8, arbitrary: fc.constant<string | undefined>(ACME_KEY) },
        {
          weight: 1,
          arbitrary: fc.constantFrom<string | undefined>(undefined, GLOBEX_KEY, ADMIN_KEY, 'not-a-key-0123456789', ''),
        },
      );
      const method = (spec: RouteSpec) =>
        fc.oneof(
          { weight: 5, arbitrary: fc.constant<Method>(spec.method) },
          { weight: 1, arbitrary: fc.constantFrom<Method>('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD') },
        );
      const routeRequest: fc.Arbitrary<RequestSpec> = fc.constantFrom(...routes).chain((spec) =>
        fc
          .record({ method: method(spec), id: segment, event: eventKey, query: query(spec), body: body(spec), key })
          .map((parts) => ({
            method: parts.method,
            url: spec.url.replace(':id', parts.id).replace(':event', parts.event) + parts.query,
            key: parts.key,
            ...(parts.method === 'GET' || parts.method === 'HEAD' ? {} : parts.body),
          })),
      );

      // 1) structured requests, one at a time
      await fc.assert(
        fc.asyncProperty(routeRequest, async (request) => {
          const reply = await send(h, request);
          check(stats, request, reply);
          // keep the fixed conversations alive for the requests after a successful delete
          const deletedId =
            request.method === 'DELETE' && reply.status === 204
              ? ids.find((id) => request.url.startsWith(`/v1/conversations/${id}`))
              : undefined;
          if (deletedId)
            expect(
              (await json('POST', '/v1/conversations', { id: deletedId, title: 'recreated', message: 'again' })).status,
            ).toBe(201);
        }),
        { numRuns: 1_600, seed },
      );

      // 2) raw paths under /v1 and raw bodies
      const rawRequest: fc.Arbitrary<RequestSpec> = fc.record({
        method: fc.constantFrom<Method>('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD'),
        url: fc
          .array(
            fc.oneof(
              fc.constantFrom(
                'v1',
                'conversations',
                'events',
                'count',
                'batch',
                'messages',
                'run',
                ...ids.slice(0, 2),
                '1',
                '..',
                '',
              ),
              fc.webSegment(),
            ),
            { minLength: 1, maxLength: 6 },
          )
          .map((parts) => `/${parts.join('/')}`),
        key: fc.constant(ACME_KEY),
        payload: fc.option(fc.string({ maxLength: 300, unit: 'binary' }), { nil: undefined }),
        contentType: fc.option(fc.constantFrom('application/json', 'text/plain'), { nil: undefined }),
      });
      await fc.assert(
        fc.asyncProperty(rawRequest, async (request) => {
          const safe =
            request.method === 'GET' || request.method === 'HEAD'
              ? { ...request, payload: undefined, contentType: undefined }
              : request;
          check(stats, safe, await send(h, safe));
        }),
        { numRuns: 500, seed },
      );

      // 3) concurrent commands on one conversation (optimistic-concurrency retries under contention)
      const command = fc.oneof(
        fc.constant<[string, unknown]>(['messages', { text: 'concurrent' }]),
        fc.constant<[string, unknown]>(['messages', { text: 'and run', run: true }]),
        fc.constantFrom<[string, unknown]>(
          ['run', {}],
          ['pause', {}],
          ['interrupt', { reason: 'fuzz' }],
          ['condense', {}],
          ['confirmation', { decision: 'approve' }],
        ),
      );
      // every accepted message is in the log exactly once, whatever ran beside it
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 2, maxLength: 8 }), async (commands) => {
          const id = (await h.acme.createConversation({ title: 'contention', message: 'first' })).conversation.id;
          const requests = commands.map(([path, payload]): RequestSpec => ({
            method: 'POST',
            url: `/v1/conversations/${id}/${path}`,
            key: ACME_KEY,
            payload: JSON.stringify(payload),
            contentType: 'application/json',
          }));
          const replies = await Promise.all(requests.map((request) => send(h, request)));
          replies.forEach((reply, index) => check(stats, requests[index]!, reply));
          const accepted = replies.filter(
            (reply, index) =>
              reply.status === 202 &&
              commands[index]![0] === 'messages' &&
              (reply.json as { appended?: boolean }).appended,
          ).length;
          const log = (await h.acme.searchEvents(id, { limit: 200 })).items;
          expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1));
          expect(log.filter((event) => event.type === 'message' && event.source === 'user').length).toBe(1 + accepted);
        }),
        { numRuns: 60, seed },
      );

      const statuses = [...stats.statuses.entries()].sort(([a], [b]) => a - b);
      console.log(
        `fuzz: ${stats.requests} requests, ${statuses.length} distinct statuses (${statuses.map(([status, count]) => `${status}×${count}`).join(' ')}), ${stats.violations.size} distinct violations (seed ${seed})`,
      );
      for (const [kind, example] of stats.violations) console.log(`fuzz violation [${kind}]: ${example}`);

      // the gateway is still well after the fuzz
      expect((await send(h, { method: 'GET', url: '/ready' })).status).toBe(200);
      const created = await json('POST', '/v1/conversations', { title: 'after the fuzz', message: 'still here' });
      expect(created.status).toBe(201);
      const id = (created.json as { id: string }).id;
      const fetched = await get(`/v1/conversations/${id}`);
      expect(fetched.status).toBe(200);
      expect(fetched.json).toMatchObject({ id, title: 'after the fuzz' });

      expect(stats.requests).toBeGreaterThanOrEqual(2_100);
      expect(stats.statuses.size).toBeGreaterThan(5); // the generator reaches more than one outcome
      expect(
        Object.fromEntries(stats.violations),
        'requests that broke the error contract (one example per kind)',
      ).toEqual({});
    },
  );

  it(
    'random frames on an authenticated socket get an ack or an error frame with a stable code, and the socket stays open',
    { timeout: 60_000 },
    async () => {
      const seed = Number(process.env['FUZZ_SEED'] ?? Date.now() % 2 ** 31);
      const s = await liveSocket(h, conversation);
      const codes = new Map<string, number>();
      let frames = 0;
      const type = fc.oneof(
        {
          weight: 3,
          arbitrary: fc.constantFrom('message', 'run', 'pause', 'interrupt', 'approve', 'reject', 'ping', 'auth'),
        },
        { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
      );
      const value: fc.Arbitrary<unknown> = fc.oneof(
        fc.constantFrom(null, true, 1, -1, '', 'x', [], {}),
        fc.string({ maxLength: 30, unit: 'binary' }),
        fc.jsonValue({ maxDepth: 2 }),
      );
      const frame = fc.oneof(
        {
          weight: 6,
          arbitrary: fc
            .record({
              type,
              fields: fc.dictionary(fc.constantFrom('id', 'text', 'run', 'reason', 'api_key', 'extra'), value, {
                maxKeys: 3,
              }),
            })
            .map(({ type: kind, fields }) => JSON.stringify({ type: kind, ...fields })),
        },
        { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((json) => JSON.stringify(json)) },
        { weight: 2, arbitrary: fc.string({ maxLength: 200, unit: 'binary' }) },
      );
      await fc.assert(
        fc.asyncProperty(frame, async (text) => {
          const marker = `probe-${frames}`;
          const start = s.frames.length;
          s.socket.send(text);
          s.socket.send(JSON.stringify({ type: 'ping', id: marker }));
          frames += 2;
          let index = start;
          const replies: ServerFrame[] = [];
          for (;;) {
            const { frame: reply, index: at } = await nextReply(s, index);
            index = at + 1;
            if (reply.type === 'ack' && reply.id === marker) break;
            replies.push(reply);
          }
          // one reply for the random frame (none for a valid repeated auth frame), each an ack or a known error
          expect(replies.length, `${text} → ${JSON.stringify(replies)}`).toBeLessThanOrEqual(1);
          for (const reply of replies) {
            expect(['ack', 'error', 'live', 'delta'], `${text} → ${JSON.stringify(reply)}`).toContain(reply.type);
            if (reply.type === 'error') {
              expect(KNOWN_CODES.has(reply.code), `${text} → ${JSON.stringify(reply)}`).toBe(true);
              codes.set(reply.code, (codes.get(reply.code) ?? 0) + 1);
            } else codes.set(reply.type, (codes.get(reply.type) ?? 0) + 1);
          }
          expect(s.socket.readyState).toBe(WebSocket.OPEN);
          await new Promise((resolve) => setTimeout(resolve, 110)); // under the socket's 20 frames a second
        }),
        { numRuns: 60, seed },
      );
      console.log(`fuzz: ${frames} socket frames, replies ${JSON.stringify(Object.fromEntries(codes))} (seed ${seed})`);
      expect(codes.get('validation_failed') ?? 0).toBeGreaterThan(0);
      s.socket.close(1000);
      await s.closed;
    },
  );
});
