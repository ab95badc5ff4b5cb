import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { WebhookEvent, type CreatedWebhook } from '@flotilla/api';
import { generateSecretsKey } from '@flotilla/secrets';
import { verifySignature } from '@flotilla/webhooks';
import { describe, expect, it } from 'vitest';
import { taskMessage } from '../support/brain-server.js';
import { startTestSystem } from '../support/system.js';

/** A webhook receiver on loopback keeping the events whose signature verifies. */
async function receiver(): Promise<{ server: Server; url: string; events: WebhookEvent[]; secret: { value: string } }> {
  const events: WebhookEvent[] = [];
  const secret = { value: '' };
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const signed = verifySignature(
        secret.value,
        request.headers['flotilla-signature'] as string | undefined,
        body,
      ).ok;
      if (signed) events.push(WebhookEvent.parse(JSON.parse(body)));
      response.writeHead(signed ? 204 : 400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, events, secret };
}

describe('retention through the services', () => {
  it("deletes a conversation idle past its tenant's or its spec's retention everywhere it lives, announced to webhooks; never one that runs, nor one without a retention", async () => {
    const hooks = await receiver();
    await using system = await startTestSystem({
      gateway: true,
      webhooks: 1,
      env: { FLOTILLA_SECRETS_KEY: generateSecretsKey() },
      gatewayEnv: {
        FLOTILLA_RETENTION: 'acme=4',
        FLOTILLA_RETENTION_SWEEP_MS: '250',
        FLOTILLA_GATEWAY_WEB_UI: 'false',
      },
      webhooksEnv: { FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' },
    });
    try {
      const registered = await system.api('POST', '/webhooks', { url: hooks.url, events: ['conversation.expiring'] });
      expect(registered.status, registered.text).toBe(201);
      hooks.secret.value = (registered.body as CreatedWebhook).secret;
      const create = async (key: string, body: Record<string, unknown>) => {
        const created = await system.api('POST', '/conversations', body, key);
        expect(created.status, created.text).toBe(201);
      };
      const task = (id: string, extra: Record<string, unknown> = {}) =>
        taskMessage({ id, steps: 1, effects: system.effects, ...extra });
      const status = async (key: string, id: string) =>
        (await system.api('GET', `/conversations/${id}`, undefined, key)).status;

      await create(system.apiKey, { id: 'expires', message: task('expires'), run: true });
      // its one command sleeps past the retention: no event meanwhile, but it runs
      await create(system.apiKey, { id: 'long-runner', message: task('long-runner', { sleep: 8 }), run: true });
      await create(system.otherApiKey, {
        id: 'short',
        spec: { retention: { idle_seconds: 2 } },
        message: task('short'),
        run: true,
      });
      await create(system.otherApiKey, { id: 'kept', message: task('kept'), run: true });
      await system.waitForStatus(
        [
          { tenant: 'acme', conversation: 'expires' },
          { tenant: 'globex', conversation: 'kept' },
        ],
        ['finished'],
        30_000,
      );
      const workspace = join(system.home, 'workspaces', 'acme', 'expires');
      expect(existsSync(workspace)).toBe(true);

      await expect.poll(() => status(system.apiKey, 'expires'), { timeout: 20_000, interval: 200 }).toBe(404);
      await expect.poll(() => status(system.otherApiKey, 'short'), { timeout: 20_000, interval: 200 }).toBe(404);
      // idle longer than the retention by its last event, but running: kept
      const runner = await system.api('GET', '/conversations/long-runner');
      expect(runner.status).toBe(200);
      expect(runner.body).toMatchObject({ status: 'running' });
      // everywhere it lived: its log (no event left to read) and its workspace
      expect((await system.events({ tenant: 'acme', conversation: 'expires' })).length).toBe(0);
      await expect.poll(() => existsSync(workspace), { timeout: 10_000 }).toBe(false);
      expect(await status(system.otherApiKey, 'kept')).toBe(200);

      // announced to the tenant's webhook that asked for it (globex has none)
      await expect
        .poll(() => hooks.events.find((event) => event.data.conversation === 'expires'), { timeout: 20_000 })
        .toBeDefined();
      const announced = hooks.events.find((event) => event.data.conversation === 'expires')!;
      expect(announced).toMatchObject({
        type: 'conversation.expiring',
        tenant: 'acme',
        data: { conversation: 'expires', status: 'finished', idle_seconds: 4 },
      });
      expect(hooks.events.some((event) => event.data.conversation === 'short')).toBe(false);
      // the running one goes once it rests as long
      await expect.poll(() => status(system.apiKey, 'long-runner'), { timeout: 30_000, interval: 250 }).toBe(404);
      expect(await status(system.otherApiKey, 'kept')).toBe(200);
    } finally {
      hooks.server.close();
    }
  }, 120_000);
});
