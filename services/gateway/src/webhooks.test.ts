import {
  MAX_WEBHOOKS_PER_TENANT,
  WEBHOOK_EVENT_TYPES,
  type CreatedWebhook,
  type DeadLetter,
  type Webhook,
} from '@flotilla/api';
import { DeadLetterStore } from '@flotilla/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, GLOBEX_KEY, startGatewayHarness, type GatewayHarness } from './test-support/gateway-harness.js';
import { expectError, expectIssue, send, sendJson } from './test-support/http-probe.js';

let h: GatewayHarness;
const logLines: string[] = [];

beforeAll(async () => {
  h = await startGatewayHarness(
    { rateLimitPerSecond: 0 },
    { logDestination: { write: (line: string) => void logLines.push(line) } },
  );
});
afterAll(async () => {
  await h?.[Symbol.asyncDispose]();
});

const create = (body: unknown, key = ACME_KEY) => sendJson(h, 'POST', '/v1/webhooks', body, key);
const get = (url: string, key = ACME_KEY) => send(h, { method: 'GET', url, key });
const remove = (url: string, key = ACME_KEY) => send(h, { method: 'DELETE', url, key });
const valid = {
  url: 'https://hooks.example.com/flotilla',
  events: ['conversation.finished', 'conversation.confirmation_pending'],
};

describe('webhooks over REST', () => {
  it('create → 201 with the signing secret, shown once; list and get show the webhook without it, for its tenant only', async () => {
    const reply = await create({ ...valid, description: 'ci notifications' });
    expect(reply.status, reply.text).toBe(201);
    const created = reply.json as CreatedWebhook;
    expect(created).toEqual({
      id: expect.stringMatching(/^wh_[0-9a-f]{32}$/),
      url: valid.url,
      events: valid.events,
      description: 'ci notifications',
      created_at: expect.any(String),
      secret: expect.stringMatching(/^whsec_/),
    });
    const { secret, ...webhook } = created;
    expect((await get('/v1/webhooks')).json).toEqual({ webhooks: [webhook] });
    expect((await get(`/v1/webhooks/${created.id}`)).json).toEqual(webhook);
    expect((await get('/v1/webhooks')).text).not.toContain(secret);
    // another tenant neither sees nor touches it
    expect((await get('/v1/webhooks', GLOBEX_KEY)).json).toEqual({ webhooks: [] });
    expectError(await get(`/v1/webhooks/${created.id}`, GLOBEX_KEY), 404, 'webhook_not_found');
    expectError(await get(`/v1/webhooks/${created.id}/dead-letters`, GLOBEX_KEY), 404, 'webhook_not_found');
    expectError(await remove(`/v1/webhooks/${created.id}`, GLOBEX_KEY), 404, 'webhook_not_found');
    expect((await get(`/v1/webhooks/${created.id}`)).status).toBe(200);
    // the secret reached no log line
    expect(logLines.join('\n')).not.toContain(secret);
    expect(logLines.join('\n')).toContain(created.id);
  });

  it('refuses bad registrations with a 400 naming the field', async () => {
    for (const url of [
      'ftp://files.example.com/hook',
      'javascript:alert(1)',
      'file:///etc/passwd',
      'hooks.example.com/no-scheme',
      'https://user:pass@hooks.example.com/',
      'https://hooks.example.com/#fragment',
      ' https://hooks.example.com/',
      `https://hooks.example.com/${'a'.repeat(2_100)}`,
      42,
    ]) {
      const reply = await create({ ...valid, url });
      expectIssue(reply, 'body.url', String(url).slice(0, 40));
    }
    const scheme = expectError(
      await create({ ...valid, url: 'ftp://files.example.com/hook' }),
      400,
      'validation_failed',
    );
    expect(scheme.message).toMatch(/http:\/\/ or https:\/\//);
    const unknown = expectError(
      await create({ ...valid, events: ['conversation.finished', 'conversation.exploded'] }),
      400,
      'validation_failed',
    );
    expect(unknown.message).toBe(
      `body.events.1: unknown event kind "conversation.exploded": the kinds are ${WEBHOOK_EVENT_TYPES.join(', ')}`,
    );
    expectIssue(await create({ ...valid, events: [] }), 'body.events', 'no kinds');
    expectIssue(
      await create({ ...valid, events: ['conversation.finished', 'conversation.finished'] }),
      'body.events',
      'a kind twice',
    );
    expectIssue(await create({ ...valid, events: 'conversation.finished' }), 'body.events', 'not a list');
    expectIssue(await create({ url: valid.url }), 'body.events', 'missing');
    // the secret is the gateway's to make, never the caller's
    expect(expectError(await create({ ...valid, secret: 'mine' }), 400, 'validation_failed').message).toMatch(/secret/);
    expectIssue(await get('/v1/webhooks/not-an-id'), 'params.id', 'bad id');
    expectIssue(
      await get('/v1/webhooks/wh_00000000000000000000000000000000/dead-letters?limit=0'),
      'query.limit',
      'bad limit',
    );
    expectError(await get('/v1/webhooks/wh_00000000000000000000000000000000'), 404, 'webhook_not_found');
  });

  it(`refuses a tenant's webhook past ${MAX_WEBHOOKS_PER_TENANT} with 409 webhook_limit_reached`, async () => {
    for (let index = 0; index < MAX_WEBHOOKS_PER_TENANT; index += 1)
      expect((await create(valid, GLOBEX_KEY)).status).toBe(201);
    expectError(await create(valid, GLOBEX_KEY), 409, 'webhook_limit_reached');
    // another tenant is not affected
    expect((await create(valid)).status).toBe(201);
  });

  it("lists a webhook's dead letters, and removes them with it", async () => {
    const created = (await create(valid)).json as Webhook;
    const store = await DeadLetterStore.create(h.nc, { replicas: 1, maxAgeMs: 0 });
    const letter: DeadLetter = {
      webhook: created.id,
      event: {
        v: 1,
        id: `evt_${'7'.repeat(32)}`,
        type: 'conversation.finished',
        created_at: '2026-01-01T00:00:00.000Z',
        tenant: 'acme',
        data: { conversation: 'c1', seq: 5, status: 'finished', previous_status: 'running' },
      },
      attempts: 12,
      enqueued_at: '2026-01-01T00:00:00.000Z',
      last_attempt_at: '2026-01-01T02:40:00.000Z',
      last_error: 'HTTP 502',
      last_status: 502,
    };
    expect((await get(`/v1/webhooks/${created.id}/dead-letters`)).json).toEqual({ dead_letters: [] });
    await store.record('acme', letter);
    expect((await get(`/v1/webhooks/${created.id}/dead-letters`)).json).toEqual({ dead_letters: [letter] });
    expect((await remove(`/v1/webhooks/${created.id}`)).status).toBe(204);
    expectError(await get(`/v1/webhooks/${created.id}/dead-letters`), 404, 'webhook_not_found');
    expect(await store.list('acme', created.id, 10)).toEqual([]);
    expectError(await remove(`/v1/webhooks/${created.id}`), 404, 'webhook_not_found');
  });
});

describe('webhooks on a gateway without the secrets key', () => {
  it('answer 503 secrets_not_configured, saying why', async () => {
    await using bare = await startGatewayHarness({ rateLimitPerSecond: 0 }, { secretsKey: null });
    const error = expectError(await sendJson(bare, 'POST', '/v1/webhooks', valid), 503, 'secrets_not_configured');
    expect(error.message).toMatch(/signing secrets are stored encrypted with the secrets key/);
    expectError(await send(bare, { method: 'GET', url: '/v1/webhooks', key: ACME_KEY }), 503, 'secrets_not_configured');
  });
});
