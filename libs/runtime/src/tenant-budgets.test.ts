import { startNats, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetOf, budgetReached, loadTenantBudgets, periodsOf } from './tenant-budgets.js';
import { TenantUsageStore } from './tenant-usage-store.js';
import { TenantBudgetGuard } from './tenant-budget-guard.js';

describe('tenant budgets', () => {
  it("reads the operator's budgets, a tenant's own before the default, and refuses a malformed one naming the variable", () => {
    const budgets = loadTenantBudgets({
      FLOTILLA_TENANT_BUDGETS: JSON.stringify({
        default: { day: { usd: 5 } },
        tenants: { acme: { month: { tokens: 1000 } } },
      }),
    });
    expect(budgetOf(budgets, 'acme')).toEqual({ month: { tokens: 1000 } });
    expect(budgetOf(budgets, 'globex')).toEqual({ day: { usd: 5 } });
    expect(loadTenantBudgets({})).toBeUndefined();
    expect(() => loadTenantBudgets({ FLOTILLA_TENANT_BUDGETS: '{"tenants": {"acme": {"day": {"usd": -1}}}}' })).toThrow(
      /FLOTILLA_TENANT_BUDGETS: tenants\.acme\.day\.usd/,
    );
    expect(() => loadTenantBudgets({ FLOTILLA_TENANT_BUDGETS: '{"weekly": {}}' })).toThrow(/FLOTILLA_TENANT_BUDGETS/);
    expect(() => loadTenantBudgets({ FLOTILLA_TENANT_BUDGETS: 'nope' })).toThrow(/FLOTILLA_TENANT_BUDGETS: not JSON/);
  });

  it('says which budget is reached, by USD or tokens, per UTC day and month', () => {
    const budget = { day: { usd: 1, tokens: 100 }, month: { usd: 10 } };
    expect(
      budgetReached('acme', budget, { day: { usd: 0.5, tokens: 99 }, month: { usd: 9.9, tokens: 99 } }),
    ).toBeUndefined();
    expect(budgetReached('acme', budget, { day: { usd: 0.5, tokens: 100 }, month: { usd: 1, tokens: 100 } })).toBe(
      'tenant acme reached its daily budget of 100 tokens (100 used)',
    );
    expect(budgetReached('acme', budget, { day: { usd: 0, tokens: 0 }, month: { usd: 10, tokens: 0 } })).toBe(
      'tenant acme reached its monthly budget of $10 ($10.0000 spent)',
    );
    expect(
      budgetReached('acme', undefined, { day: { usd: 99, tokens: 99 }, month: { usd: 99, tokens: 99 } }),
    ).toBeUndefined();
    expect(periodsOf(new Date('2026-12-31T23:59:59.999Z'))).toEqual({ day: '2026-12-31', month: '2026-12' });
  });
});

describe('tenant usage on a real nats-server', () => {
  let server: NatsTestServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNats();
    nc = await connect({ servers: server.url });
  });
  afterAll(async () => {
    await nc.close();
    await server[Symbol.asyncDispose]();
  });

  it('adds what writers racing on one tenant spend without losing any, per day and month, and the guard stops the tenant once it is reached', async () => {
    const store = await TenantUsageStore.open(nc);
    // a second step worker: its own connection, its own store
    const other = await connect({ servers: server.url });
    const otherStore = await TenantUsageStore.open(other);
    const at = new Date('2026-12-06T10:00:00Z');
    // two workers' steps finishing at once
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        (index % 2 === 0 ? store : otherStore).add('acme', { usd: 0.01, tokens: 10 }, at),
      ),
    );
    await other.close();
    await store.add('acme', { usd: 1, tokens: 1 }, new Date('2026-12-07T00:00:00Z'));
    const usage = await store.read('acme', at);
    expect(usage.day.tokens).toBe(300);
    expect(usage.day.usd).toBeCloseTo(0.3, 10);
    expect(usage.month.tokens).toBe(301);
    expect((await store.all(at)).get('acme')?.day.tokens).toBe(300);

    const guard = new TenantBudgetGuard({ tenants: { acme: { day: { tokens: 310 } } } }, store, {
      now: () => at,
      cacheMs: 60_000,
    });
    expect(await guard.reached('acme')).toBeUndefined();
    expect(await guard.reached('globex')).toBeUndefined(); // no budget: never stopped
    // what this worker counts is seen at once, before the bucket is read again
    guard.spent('acme', { usd: 0, tokens: 10 });
    expect(await guard.reached('acme')).toBe('tenant acme reached its daily budget of 310 tokens (310 used)');
    await expect.poll(async () => (await store.read('acme', at)).day.tokens).toBe(310);
  });
});
