import type { TenantUsage, TenantUsageReport } from '@flotilla/api';
import {
  budgetOf,
  budgetReached,
  NO_USAGE,
  periodsOf,
  type TenantBudgets,
  type TenantUsageStore,
  type Usage,
} from '@flotilla/runtime';

/**
 * The operator's view of the tenants' usage: every tenant that spent something this UTC day or
 * month, and every tenant the budgets name, each beside its budget and whether it is reached.
 */
export async function tenantUsageReport(
  usage: { readonly store: TenantUsageStore; readonly budgets: TenantBudgets } | undefined,
  at: Date,
): Promise<TenantUsageReport> {
  const { day, month } = periodsOf(at);
  if (!usage) return { day, month, counting: false, tenants: [] };
  const spent = await usage.store.all(at);
  const names = [...new Set([...spent.keys(), ...Object.keys(usage.budgets.tenants)])].sort();
  return {
    day,
    month,
    counting: true,
    tenants: names.map((tenant) => {
      const budget = budgetOf(usage.budgets, tenant);
      const used = spent.get(tenant) ?? { day: NO_USAGE, month: NO_USAGE };
      const period = (usedIn: Usage, limits: { usd?: number; tokens?: number } | undefined) => ({
        usd: usedIn.usd,
        tokens: usedIn.tokens,
        budget: limits ? { ...limits } : null,
      });
      return {
        tenant,
        day: period(used.day, budget?.day),
        month: period(used.month, budget?.month),
        reached: budgetReached(tenant, budget, used) ?? null,
      };
    }),
  };
}

/** One tenant's own usage and budgets (what `GET /v1/usage` answers a tenant's key). */
export async function ownUsage(
  usage: { readonly store: TenantUsageStore; readonly budgets: TenantBudgets } | undefined,
  tenant: string,
  at: Date,
): Promise<TenantUsage> {
  const { day, month } = periodsOf(at);
  const empty = { usd: 0, tokens: 0, budget: null };
  if (!usage) return { day, month, counting: false, tenant, usage: { day: empty, month: empty }, reached: null };
  const budget = budgetOf(usage.budgets, tenant);
  const used = await usage.store.read(tenant, at);
  const period = (usedIn: Usage, limits: { usd?: number; tokens?: number } | undefined) => ({
    usd: usedIn.usd,
    tokens: usedIn.tokens,
    budget: limits ? { ...limits } : null,
  });
  return {
    day,
    month,
    counting: true,
    tenant,
    usage: { day: period(used.day, budget?.day), month: period(used.month, budget?.month) },
    reached: budgetReached(tenant, budget, used) ?? null,
  };
}
