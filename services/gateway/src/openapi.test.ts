import { API_KEY_HEADER, API_PREFIX, ERROR_CODES, ErrorBody } from '@flotilla/api';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from './route-table.js';
import { ACME_KEY, ADMIN_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';

type Json = Record<string, unknown>;
type Operation = {
  operationId: string;
  summary: string;
  tags: string[];
  security?: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: Json }[];
  requestBody?: { required: boolean; content: Record<string, { schema: Json }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Json }> }>;
};
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
};
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT' | 'HEAD' | 'OPTIONS';

let h: GatewayHarness;
let document: Document;

beforeAll(async () => {
  h = await startGatewayHarness();
  document = h.gateway.openapi as unknown as Document;
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

/** `/v1/conversations/{id}` → `/v1/conversations/:id` */
const toFastify = (path: string): string => path.replace(/\{([A-Za-z_]+)\}/g, ':$1');
const toOpenApi = (url: string): string => url.replace(/:([A-Za-z_]+)/g, '{$1}');

function operations(): { method: Method; path: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase() as Method, path, operation })),
  );
}

const specOf = (operationId: string): RouteSpec => {
  const spec = h.gateway.routes.find((route) => route.operationId === operationId);
  if (!spec) throw new Error(`no route ${operationId} in the table`);
  return spec;
};

async function call(
  method: Method,
  url: string,
  options: { key?: string; body?: unknown } = {},
): Promise<{ status: number; json: unknown; text: string }> {
  const response = await h.gateway.app.inject({
    method,
    url,
    headers: {
      ...(options.key ? { [API_KEY_HEADER]: options.key } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { payload: JSON.stringify(options.body) } : {}),
  });
  let json: unknown;
  try {
    json = response.body.length > 0 ? JSON.parse(response.body) : undefined;
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, json, text: response.body };
}

/**
 * Every (method, url) fastify has registered, read from `printRoutes` (the tree of the router):
 * an `onRoute` hook cannot be added once the app is built, but the router can be printed.
 */
function registeredRoutes(): { method: string; url: string }[] {
  const tree = h.gateway.app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const routes: { method: string; url: string }[] = [];
  for (const line of tree.split('\n')) {
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?\s*$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const url = (depth > 0 ? stack[depth - 1]! : '') + match[2]!;
    stack[depth] = url;
    stack.length = depth + 1;
    for (const method of (match[3] ?? '')
      .split(',')
      .map((text) => text.trim())
      .filter(Boolean))
      routes.push({ method, url });
  }
  return routes;
}

describe('the OpenAPI document', () => {
  it('is served at /docs/openapi.json as the gateway built it', async () => {
    const response = await fetch(`${h.url}/docs/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(JSON.parse(JSON.stringify(document)));
  });

  it('is the document committed as docs/openapi.json (after a route change: npm run openapi, and commit it)', async () => {
    await expect(`${JSON.stringify(document, null, 2)}\n`).toMatchFileSnapshot('../../../docs/openapi.json');
  });

  it('validates as OpenAPI 3.1 (and the validator rejects a broken copy)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document) as unknown as Json);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);

    // the validator really validates: an operation whose response has no description is refused
    const broken = structuredClone(document) as unknown as Document;
    const first = Object.values(Object.values(broken.paths)[0]!)[0]!;
    delete (first.responses['400'] as { description?: string }).description;
    expect((await new Validator().validate(broken as unknown as Json)).valid).toBe(false);
  });

  it('has only internal $refs, and each resolves', () => {
    const refs: string[] = [];
    const walk = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object') {
        for (const [key, inner] of Object.entries(value)) {
          if (key === '$ref' && typeof inner === 'string') refs.push(inner);
          else walk(inner);
        }
      }
    };
    walk(document);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) {
      expect(ref).toMatch(/^#\//);
      let target: unknown = document;
      for (const part of ref.slice(2).split('/'))
        target = (target as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      expect(target, ref).toBeTypeOf('object');
    }
    expect(JSON.stringify(document)).not.toContain('"$schema"');
  });

  it('documents exactly the route table: one operation per route, unique operationIds', () => {
    const documented = operations().map(({ method, path, operation }) => `${method} ${path} ${operation.operationId}`);
    const table = h.gateway.routes.map((route) => `${route.method} ${toOpenApi(route.url)} ${route.operationId}`);
    expect(documented.sort()).toEqual(table.sort());
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const path of Object.keys(document.paths)) {
      expect(path.startsWith(`${API_PREFIX}/`), path).toBe(true);
      expect(path, 'fastify syntax leaked into the document').not.toContain(':');
    }
  });

  it('every documented operation is registered in fastify', () => {
    for (const { method, path } of operations()) {
      expect(h.gateway.app.hasRoute({ method, url: toFastify(path) }), `${method} ${path}`).toBe(true);
    }
    // the check can fail: a route that does not exist is not found
    expect(h.gateway.app.hasRoute({ method: 'PUT', url: '/v1/conversations/:id' })).toBe(false);
  });

  it('every route fastify serves under /v1 is documented (HEAD aside, which fastify adds to each GET)', () => {
    const registered = registeredRoutes();
    // the parse of the router's tree found the routes outside /v1 too
    expect(registered).toEqual(
      expect.arrayContaining([
        { method: 'GET', url: '/health' },
        { method: 'GET', url: '/docs/openapi.json' },
      ]),
    );
    const underPrefix = registered.filter((route) => route.url.startsWith(`${API_PREFIX}/`) && route.method !== 'HEAD');
    expect(underPrefix.length).toBeGreaterThanOrEqual(h.gateway.routes.length);
    for (const route of underPrefix) {
      const operation = document.paths[toOpenApi(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url} is served but not documented`).toBeDefined();
    }
    // and every GET's HEAD twin is really a GET route
    for (const route of registered.filter((candidate) => candidate.method === 'HEAD')) {
      expect(registered, `HEAD ${route.url}`).toContainEqual({ method: 'GET', url: route.url });
    }
  });

  it('each operation documents its success statuses, 400, 401 and the error schema', () => {
    for (const { method, path, operation } of operations()) {
      const spec = specOf(operation.operationId);
      const where = `${method} ${path}`;
      const statuses = Object.keys(operation.responses);
      for (const success of Object.keys(spec.responses)) {
        expect(statuses, `${where} success ${success}`).toContain(success);
        expect(Number(success)).toBeGreaterThanOrEqual(200);
        expect(Number(success)).toBeLessThan(300);
        const schema = spec.responses[Number(success)];
        if (schema)
          expect(
            operation.responses[success]!.content?.['application/json']?.schema,
            `${where} ${success} schema`,
          ).toBeTypeOf('object');
        else if (spec.rawResponse?.status === Number(success))
          expect(
            operation.responses[success]!.content?.['application/octet-stream']?.schema,
            `${where} ${success} bytes`,
          ).toEqual({ type: 'string', contentMediaType: 'application/octet-stream' });
        else expect(operation.responses[success]!.content, `${where} ${success} has no body`).toBeUndefined();
      }
      expect(statuses, where).toContain('400');
      expect(spec.access).not.toBe('public');
      expect(statuses, where).toContain('401');
      expect(operation.security ?? document, `${where} must not opt out of security`).not.toEqual([]);
      if (spec.access === 'admin') expect(statuses, where).toContain('403');
      if (spec.body) expect(statuses, `${where} has a body: 413`).toContain('413');
      if (path.includes('{id}')) expect(statuses, `${where} takes an id: 404`).toContain('404');
      for (const status of statuses.filter((text) => Number(text) >= 400)) {
        expect(operation.responses[status]!.content?.['application/json']?.schema, `${where} ${status}`).toEqual({
          $ref: '#/components/schemas/Error',
        });
      }
      for (const status of statuses)
        expect(operation.responses[status]!.description.length, `${where} ${status}`).toBeGreaterThan(0);
    }
    const error = document.components.schemas['Error'] as {
      properties?: { error?: { properties?: { code?: { enum?: string[] } } } };
    };
    expect(error.properties?.error?.properties?.code?.enum).toEqual([...ERROR_CODES]);
  });

  it('each operation documents its path and query parameters and its body', () => {
    for (const { method, path, operation } of operations()) {
      const spec = specOf(operation.operationId);
      const where = `${method} ${path}`;
      const pathNames = [...path.matchAll(/\{([A-Za-z_]+)\}/g)].map((match) => match[1]!);
      const documentedPath = operation.parameters.filter((parameter) => parameter.in === 'path');
      expect(documentedPath.map((parameter) => parameter.name).sort(), where).toEqual([...pathNames].sort());
      for (const parameter of documentedPath) expect(parameter.required, `${where} ${parameter.name}`).toBe(true);
      const queryShape = (spec.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      expect(
        operation.parameters
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => parameter.name)
          .sort(),
        where,
      ).toEqual(Object.keys(queryShape).sort());
      if (spec.body) {
        expect(operation.requestBody?.content['application/json']?.schema, `${where} body`).toBeTypeOf('object');
        expect(operation.requestBody?.required, `${where} body required`).toBe(!spec.body.safeParse(undefined).success);
      } else if (spec.rawBody) {
        expect(operation.requestBody?.content[spec.rawBody.contentType]?.schema, `${where} raw body`).toEqual({
          type: 'string',
          contentMediaType: spec.rawBody.contentType,
        });
        expect(operation.requestBody?.required, `${where} raw body required`).toBe(true);
      } else expect(operation.requestBody, `${where} has no body`).toBeUndefined();
    }
  });
});

describe('probing every documented operation', () => {
  it('without a key, each answers 401 unauthorized (as documented)', async () => {
    for (const { method, path } of operations()) {
      const { status, json } = await call(
        method,
        path.replace('{id}', 'probe-unauth').replace('{event}', '1'),
        method === 'GET' || method === 'DELETE' ? {} : { body: {} },
      );
      expect(status, `${method} ${path}`).toBe(401);
      expect((json as ErrorBody).error.code).toBe('unauthorized');
    }
  });

  it('with a valid request, each answers a documented status (never route_not_found) with a body its schema accepts', async () => {
    const WORKSPACE_OPERATIONS = ['listFiles', 'downloadFile', 'uploadFile', 'getGitStatus', 'getGitDiff'];
    const id = 'probe-openapi';
    const webhook = { url: 'https://hooks.example.com/probe', events: ['conversation.finished'] };
    const webhookId = ((await call('POST', '/v1/webhooks', { key: ACME_KEY, body: webhook })).json as { id: string })
      .id;
    const schedule = {
      when: { cron: '0 0 9 * * MON-FRI', time_zone: 'Europe/Paris' },
      action: { type: 'create_conversation', message: 'good morning' },
      missed_runs: 'skip',
    };
    const scheduleId = ((await call('POST', '/v1/schedules', { key: ACME_KEY, body: schedule })).json as { id: string })
      .id;
    const probes: Record<string, { method: Method; url: string; key?: string; body?: unknown }> = {
      getServerInfo: { method: 'GET', url: '/v1/server-info' },
      createConversation: {
        method: 'POST',
        url: '/v1/conversations',
        body: { id, title: 'probe', tags: ['a'], message: 'hello' },
      },
      listConversations: { method: 'GET', url: '/v1/conversations?limit=5&sort=created_at' },
      countConversations: { method: 'GET', url: '/v1/conversations/count?status=idle' },
      batchGetConversations: { method: 'GET', url: `/v1/conversations/batch?ids=${id},nobody` },
      getConversation: { method: 'GET', url: `/v1/conversations/${id}` },
      updateConversation: { method: 'PATCH', url: `/v1/conversations/${id}`, body: { title: 'renamed', tags: ['b'] } },
      getConversationSpec: { method: 'GET', url: `/v1/conversations/${id}/spec` },
      updateConversationSpec: {
        method: 'PATCH',
        url: `/v1/conversations/${id}/spec`,
        body: { spec: { tools: ['think', 'finish'] }, reason: 'probe' },
      },
      sendMessage: { method: 'POST', url: `/v1/conversations/${id}/messages`, body: { text: 'more' } },
      runConversation: { method: 'POST', url: `/v1/conversations/${id}/run`, body: {} },
      condenseConversation: { method: 'POST', url: `/v1/conversations/${id}/condense`, body: {} },
      pauseConversation: { method: 'POST', url: `/v1/conversations/${id}/pause`, body: { reason: 'probe' } },
      interruptConversation: { method: 'POST', url: `/v1/conversations/${id}/interrupt`, body: {} },
      respondToConfirmation: {
        method: 'POST',
        url: `/v1/conversations/${id}/confirmation`,
        body: { decision: 'approve' },
      },
      askConversation: { method: 'POST', url: `/v1/conversations/${id}/ask`, body: { question: 'what now?' } },
      forkConversation: {
        method: 'POST',
        url: `/v1/conversations/${id}/fork`,
        body: { id: 'probe-fork', title: 'a fork' },
      },
      rewindConversation: {
        method: 'POST',
        url: `/v1/conversations/${id}/rewind`,
        body: { to_seq: 1, reason: 'probe' },
      },
      getFinalResponse: { method: 'GET', url: `/v1/conversations/${id}/final-response` },
      searchEvents: { method: 'GET', url: `/v1/conversations/${id}/events?order=desc&limit=2` },
      countEvents: { method: 'GET', url: `/v1/conversations/${id}/events/count?source=user` },
      getEvent: { method: 'GET', url: `/v1/conversations/${id}/events/1` },
      setConversationSecret: {
        method: 'PUT',
        url: `/v1/conversations/${id}/secrets/PROBE_TOKEN`,
        body: { value: 'probe-secret-value' },
      },
      listConversationSecrets: { method: 'GET', url: `/v1/conversations/${id}/secrets` },
      removeConversationSecret: { method: 'DELETE', url: `/v1/conversations/${id}/secrets/PROBE_TOKEN` },
      setTenantSecret: { method: 'PUT', url: '/v1/secrets/PROBE_TOKEN', body: { value: 'probe-secret-value' } },
      listTenantSecrets: { method: 'GET', url: '/v1/secrets' },
      removeTenantSecret: { method: 'DELETE', url: '/v1/secrets/PROBE_TOKEN' },
      createWebhook: { method: 'POST', url: '/v1/webhooks', body: webhook },
      listWebhooks: { method: 'GET', url: '/v1/webhooks' },
      getWebhook: { method: 'GET', url: `/v1/webhooks/${webhookId}` },
      listWebhookDeadLetters: { method: 'GET', url: `/v1/webhooks/${webhookId}/dead-letters?limit=10` },
      removeWebhook: { method: 'DELETE', url: `/v1/webhooks/${webhookId}` },
      createSchedule: { method: 'POST', url: '/v1/schedules', body: { ...schedule, when: { every: '1h' } } },
      listSchedules: { method: 'GET', url: '/v1/schedules' },
      getSchedule: { method: 'GET', url: `/v1/schedules/${scheduleId}` },
      pauseSchedule: { method: 'POST', url: `/v1/schedules/${scheduleId}/pause` },
      resumeSchedule: { method: 'POST', url: `/v1/schedules/${scheduleId}/resume` },
      runSchedule: { method: 'POST', url: `/v1/schedules/${scheduleId}/run` },
      deleteSchedule: { method: 'DELETE', url: `/v1/schedules/${scheduleId}` },
      listFiles: { method: 'GET', url: `/v1/conversations/${id}/files?path=src` },
      downloadFile: { method: 'GET', url: `/v1/conversations/${id}/files/content?path=src/app.py` },
      uploadFile: { method: 'PUT', url: `/v1/conversations/${id}/files/content?path=src/app.py` },
      getGitStatus: { method: 'GET', url: `/v1/conversations/${id}/git/status` },
      getGitDiff: { method: 'GET', url: `/v1/conversations/${id}/git/diff?path=src` },
      deleteConversation: { method: 'DELETE', url: `/v1/conversations/${id}` },
      getTenantUsage: { method: 'GET', url: '/v1/admin/usage', key: ADMIN_KEY },
      getUsage: { method: 'GET', url: '/v1/usage' },
      createApiKey: {
        method: 'POST',
        url: '/v1/admin/api-keys',
        key: ADMIN_KEY,
        body: { tenant: 'probe', name: 'openapi probe' },
      },
    };
    // a new route without a probe here fails this test: the probe table must cover the document
    expect(Object.keys(probes).sort()).toEqual(
      operations()
        .map(({ operation }) => operation.operationId)
        .sort(),
    );

    const seen: Record<string, number> = {};
    for (const [operationId, probe] of Object.entries(probes)) {
      const spec = specOf(operationId);
      const { status, json, text } = await call(probe.method, probe.url, {
        key: probe.key ?? ACME_KEY,
        ...(probe.body !== undefined ? { body: probe.body } : {}),
      });
      seen[operationId] = status;
      const where = `${operationId}: ${probe.method} ${probe.url} → ${status} ${text.slice(0, 300)}`;
      expect((json as ErrorBody | undefined)?.error?.code, where).not.toBe('route_not_found');
      const operation = document.paths[toOpenApi(spec.url)]![spec.method.toLowerCase()]!;
      expect(Object.keys(operation.responses), where).toContain(String(status));
      if (status >= 400) {
        expect(ErrorBody.safeParse(json).success, where).toBe(true);
      } else {
        const schema = spec.responses[status];
        expect(schema, where).not.toBeUndefined();
        if (schema === null) expect(text, where).toBe('');
        else {
          const parsed = schema!.safeParse(json);
          expect(parsed.success, `${where}\n${parsed.error?.message ?? ''}`).toBe(true);
        }
      }
    }
    // the happy paths really succeeded: each answered its (first) documented success status
    const expected = Object.fromEntries(
      Object.keys(probes)
        .filter(
          (operationId) =>
            operationId !== 'respondToConfirmation' &&
            operationId !== 'askConversation' &&
            !WORKSPACE_OPERATIONS.includes(operationId),
        )
        .map((operationId) => [
          operationId,
          Number(
            operationId === 'createConversation' || operationId === 'forkConversation'
              ? 201
              : Object.keys(specOf(operationId).responses)[0],
          ),
        ]),
    );
    expect(seen).toMatchObject(expected);
    // nothing awaits confirmation: a documented 409 with a stable code
    expect(seen['respondToConfirmation']).toBe(409);
    // no step worker runs beside this gateway to answer: a documented 503 at once (nats-server's no responders)
    expect(seen['askConversation']).toBe(503);
    // nor a tool runner to reach the workspace (tests/e2e/workspace-files.test.ts has them answer)
    for (const operationId of WORKSPACE_OPERATIONS) expect(seen[operationId], operationId).toBe(503);
  });

  it('each status a bad request gets is documented for its operation', async () => {
    const undocumented: string[] = [];
    for (const { method, path, operation } of operations()) {
      const spec = specOf(operation.operationId);
      const url = path.replace('{id}', 'probe-nobody').replace('{event}', '1');
      const key = spec.access === 'admin' ? ADMIN_KEY : ACME_KEY;
      const probes: { what: string; payload?: string; contentType?: string; url?: string; key?: string }[] = [
        { what: 'no key', key: '' },
      ];
      if (spec.body) {
        probes.push(
          { what: 'malformed JSON', payload: '{"a":', contentType: 'application/json' },
          {
            what: 'a body over the limit',
            payload: JSON.stringify({ text: 'x'.repeat(h.config.maxBodyBytes + 1) }),
            contentType: 'application/json',
          },
          { what: 'a body that is not JSON', payload: '<a/>', contentType: 'application/xml' },
        );
      }
      if (spec.query) probes.push({ what: 'an unknown query parameter', url: `${url}?bogus=1` });
      if (spec.access === 'admin')
        probes.push({ what: 'a tenant key', key: ACME_KEY, payload: '{}', contentType: 'application/json' });
      for (const probe of probes) {
        const response = await h.gateway.app.inject({
          method,
          url: probe.url ?? url,
          headers: {
            ...((probe.key ?? key) ? { [API_KEY_HEADER]: probe.key ?? key } : {}),
            ...(probe.contentType ? { 'content-type': probe.contentType } : {}),
          },
          ...(probe.payload !== undefined ? { payload: probe.payload } : {}),
        });
        const code = (JSON.parse(response.body) as ErrorBody).error.code;
        expect(response.statusCode, `${operation.operationId} ${probe.what}`).toBeGreaterThanOrEqual(400);
        if (!(String(response.statusCode) in operation.responses)) {
          undocumented.push(
            `${operation.operationId} (${method} ${path}): ${probe.what} → ${response.statusCode} ${code}, documented: ${Object.keys(operation.responses).join(' ')}`,
          );
        }
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('an unknown id answers a documented 404 on every id route', async () => {
    for (const { method, path, operation } of operations().filter(({ path: candidate }) =>
      candidate.includes('{id}'),
    )) {
      // a webhook's or schedule's id has a shape of its own: a well-formed one that is nobody's
      const webhookRoute = path.startsWith('/v1/webhooks/');
      const scheduleRoute = path.startsWith('/v1/schedules/');
      // a file route needs its file's path
      const query = path.endsWith('/files/content') ? '?path=a.txt' : '';
      const url = `${path
        .replace(
          '{id}',
          webhookRoute ? `wh_${'0'.repeat(32)}` : scheduleRoute ? `sch_${'0'.repeat(32)}` : 'probe-nobody',
        )
        .replace('{event}', '1')
        .replace('{name}', 'PROBE_TOKEN')}${query}`;
      const bodies: Record<string, unknown> = {
        updateConversation: { title: 't' },
        updateConversationSpec: { template: 'none' },
        sendMessage: { text: 'x' },
        rewindConversation: { to_seq: 1 },
        askConversation: { question: 'anyone?' },
        respondToConfirmation: { decision: 'approve' },
        setConversationSecret: { value: 'probe-secret-value' },
      };
      // an upload's body is bytes, not JSON: sent without one, it is an empty file
      const body =
        (method === 'POST' || method === 'PATCH' || method === 'PUT') && operation.operationId !== 'uploadFile'
          ? (bodies[operation.operationId] ?? {})
          : undefined;
      const { status, json } = await call(method, url, { key: ACME_KEY, ...(body !== undefined ? { body } : {}) });
      expect(status, `${method} ${url}`).toBe(404);
      expect(Object.keys(operation.responses)).toContain('404');
      expect((json as ErrorBody).error.code, `${method} ${url}`).toBe(
        webhookRoute ? 'webhook_not_found' : scheduleRoute ? 'schedule_not_found' : 'conversation_not_found',
      );
    }
  });
});

describe('GET /docs', () => {
  it('returns HTML listing every documented path and method', async () => {
    const response = await fetch(`${h.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('/docs/openapi.json');
    const rows = [
      ...html.matchAll(
        /<td class="m (\w+)">(\w+)<\/td><td><code>([^<]+)<\/code><\/td><td>[^<]*<\/td><td>([^<]*)<\/td>/g,
      ),
    ].map((match) => ({
      method: match[2]!,
      path: match[3]!,
      statuses: match[4]!.split(' '),
    }));
    const documented = operations();
    expect(rows.map((row) => `${row.method} ${row.path}`).sort()).toEqual(
      documented.map(({ method, path }) => `${method} ${path}`).sort(),
    );
    for (const { method, path, operation } of documented) {
      const row = rows.find((candidate) => candidate.method === method && candidate.path === path)!;
      expect(row.statuses.sort(), `${method} ${path}`).toEqual(Object.keys(operation.responses).sort());
    }
    for (const path of Object.keys(document.paths)) expect(html).toContain(`<code>${path}</code>`);
  });
});
