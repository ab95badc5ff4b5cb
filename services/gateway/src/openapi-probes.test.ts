// Requests to every documented operation, each answered as the OpenAPI document says. (The
// document itself: openapi.test.ts.)
import { API_KEY_HEADER, ErrorBody } from '@flotilla/api';
import { describe, expect, it } from 'vitest';
import { ACME_KEY, ADMIN_KEY } from './test-support/gateway-harness.js';
import {
  document,
  h,
  operations,
  specOf,
  startDocumentedGateway,
  toOpenApi,
  type Method,
} from './test-support/openapi-document.js';

startDocumentedGateway();

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
