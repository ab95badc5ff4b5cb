import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CreatedWebhook, type TenantUsageReport, WebhookEvent } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import { generateSecretsKey } from '@flotilla/secrets';
import { verifySignature } from '@flotilla/webhooks';
import { describe, expect, it } from 'vitest';
import { startTestSystem } from '../support/system.js';

/** A webhook receiver on loopback that keeps the events whose signature checks out. */
async function startReceiver(): Promise<{
  url: string;
  secret: string;
  events: WebhookEvent[];
  close(): Promise<void>;
}> {
  const events: WebhookEvent[] = [];
  const receiver = {
    url: '',
    secret: '',
    events,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const signed = verifySignature(
        receiver.secret,
        request.headers['flotilla-signature'] as string | undefined,
        body,
      );
      if (signed.ok) events.push(WebhookEvent.parse(JSON.parse(body)));
      response.writeHead(signed.ok ? 204 : 400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}

describe('tenant budgets', () => {
  it("stop a tenant's runs with a visible reason and a webhook once its daily tokens are spent; another tenant goes on; the operator's route shows the usage", async () => {
    const receiver = await startReceiver();
    // the scripted model reports 120, 140, 160, … tokens per step: 300 is spent after a few
    const budgets = { tenants: { acme: { day: { tokens: 300 } } } };
    await using system = await startTestSystem({
      gateway: true,
      webhooks: 1,
      env: { FLOTILLA_SECRETS_KEY: generateSecretsKey(), FLOTILLA_TENANT_BUDGETS: JSON.stringify(budgets) },
      webhooksEnv: { FLOTILLA_WEBHOOK_ALLOWED_NETWORKS: '127.0.0.1/32' },
    });
    try {
      const created = await system.api('POST', '/webhooks', {
        url: receiver.url,
        events: ['conversation.status_changed'],
      });
      expect(created.status, created.text).toBe(201);
      receiver.secret = (created.body as CreatedWebhook).secret;

      const acme = { tenant: 'acme', conversation: 'over-budget' };
      const globex = { tenant: 'globex', conversation: 'no-budget' };
      await Promise.all([
        system.start(acme, { id: acme.conversation, steps: 6, tool: 'think' }),
        system.start(globex, { id: globex.conversation, steps: 6, tool: 'think' }),
      ]);
      await system.waitForStatus([acme], ['error', 'finished'], 60_000);
      await system.waitForStatus([globex], ['finished'], 60_000);

      // acme's run stopped at the first step after its tokens reached 300, saying why
      const tokensOf = (events: readonly Event[]): number[] =>
        events.flatMap((event) =>
          event.type === 'llm_usage' && event.purpose === 'step' ? [event.prompt_tokens + event.completion_tokens] : [],
        );
      const events = await system.events(acme);
      const spent = tokensOf(events);
      const total = spent.reduce((sum, tokens) => sum + tokens, 0);
      expect(total).toBeGreaterThanOrEqual(300);
      expect(total - spent.at(-1)!).toBeLessThan(300);
      expect(spent.length).toBeLessThan(7);
      const stopped = events.find((event) => event.type === 'conversation_error');
      expect(stopped).toMatchObject({ code: 'tenant_budget_reached' });
      expect(stopped?.type === 'conversation_error' && stopped.detail).toContain(
        `tenant acme reached its daily budget of 300 tokens (${total} used)`,
      );
      const resource = await system.api('GET', `/conversations/${acme.conversation}`);
      expect(resource.body).toMatchObject({ status: 'error', last_error: { code: 'tenant_budget_reached' } });
      // the other tenant has no budget: its run finished
      const globexSpent = tokensOf(await system.events(globex));
      expect(globexSpent).toHaveLength(7);

      // a webhook told acme
      await expect
        .poll(
          () =>
            receiver.events.some(
              (event) =>
                event.data.conversation === acme.conversation &&
                'status' in event.data &&
                event.data.status === 'error',
            ),
          { timeout: 30_000 },
        )
        .toBe(true);

      // the operator sees the usage and the budget; a tenant's key may not
      expect((await system.api('GET', '/admin/usage')).status).toBe(403);
      const report = await system.api('GET', '/admin/usage', undefined, system.adminKey);
      expect(report.status, report.text).toBe(200);
      const usage = report.body as TenantUsageReport;
      expect(usage.counting).toBe(true);
      const acmeUsage = usage.tenants.find((tenant) => tenant.tenant === 'acme');
      expect(acmeUsage?.day).toMatchObject({ tokens: total, budget: { tokens: 300 } });
      expect(acmeUsage?.month).toMatchObject({ tokens: total, budget: null });
      expect(acmeUsage?.reached).toMatch(/daily budget of 300 tokens/);
      const globexUsage = usage.tenants.find((tenant) => tenant.tenant === 'globex');
      expect(globexUsage?.day.tokens).toBe(globexSpent.reduce((sum, tokens) => sum + tokens, 0));
      expect(globexUsage?.reached).toBeNull();

      // the tenant sees its own, and only its own
      const own = await system.api('GET', '/usage');
      expect(own.body).toMatchObject({
        counting: true,
        tenant: 'acme',
        usage: { day: { tokens: total, budget: { tokens: 300 } } },
        reached: acmeUsage?.reached,
      });
      expect(
        ((await system.api('GET', '/usage', undefined, system.otherApiKey)).body as { tenant: string }).tenant,
      ).toBe('globex');

      // a new run of the tenant stops at once, before any model call
      const calls = system.brain.calls.length;
      const again = await system.api('POST', `/conversations/${acme.conversation}/run`, {});
      expect(again.status, again.text).toBe(202);
      await expect
        .poll(async () => (await system.events(acme)).filter((event) => event.type === 'conversation_error').length, {
          timeout: 30_000,
        })
        .toBe(2);
      expect(system.brain.calls.length).toBe(calls);
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
