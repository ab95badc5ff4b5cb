import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** What a tenant may spend in a period: USD (the steps' `cost_usd`) and tokens (prompt + completion), either or both. */
export const BudgetLimits = z.strictObject({
  usd: z.number().positive().optional(),
  tokens: z.number().int().positive().optional(),
});
export type BudgetLimits = z.infer<typeof BudgetLimits>;

/** A tenant's budgets per UTC day and per UTC month. */
export const TenantBudget = z.strictObject({ day: BudgetLimits.optional(), month: BudgetLimits.optional() });
export type TenantBudget = z.infer<typeof TenantBudget>;

/**
 * The operator's budgets (FLOTILLA_TENANT_BUDGETS or FLOTILLA_TENANT_BUDGETS_FILE, JSON): `default`
 * for every tenant without its own, `tenants` by name. E.g.
 * `{"default": {"day": {"usd": 20}}, "tenants": {"acme": {"day": {"usd": 100, "tokens": 5000000}, "month": {"usd": 2000}}}}`.
 */
export const TenantBudgets = z.strictObject({
  default: TenantBudget.optional(),
  tenants: z.record(z.string().min(1), TenantBudget).default({}),
});
export type TenantBudgets = z.infer<typeof TenantBudgets>;

/** The operator's budgets from the environment, undefined when none are set; a malformed value throws naming the variable. */
export function loadTenantBudgets(environment: NodeJS.ProcessEnv = process.env): TenantBudgets | undefined {
  const file = environment['FLOTILLA_TENANT_BUDGETS_FILE'];
  const variable = file ? 'FLOTILLA_TENANT_BUDGETS_FILE' : 'FLOTILLA_TENANT_BUDGETS';
  const text = file ? readFileSync(file, 'utf8') : environment['FLOTILLA_TENANT_BUDGETS'];
  if (!text) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${variable}: not JSON (${(error as Error).message})`);
  }
  const result = TenantBudgets.safeParse(json);
  if (!result.success)
    throw new Error(
      `${variable}: ${result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}`,
    );
  return result.data;
}

/** The tenant's budget: its own, else the default (undefined: no budget). */
export function budgetOf(budgets: TenantBudgets | undefined, tenant: string): TenantBudget | undefined {
  return budgets?.tenants[tenant] ?? budgets?.default;
}

export type Usage = { readonly usd: number; readonly tokens: number };
export const NO_USAGE: Usage = Object.freeze({ usd: 0, tokens: 0 });

/** The UTC day (`2026-12-06`) and month (`2026-12`) a time falls in: the periods budgets count over. */
export function periodsOf(at: Date): { readonly day: string; readonly month: string } {
  const day = at.toISOString().slice(0, 10);
  return { day, month: day.slice(0, 7) };
}

/** Why the tenant may not spend more (a sentence for the stopped run), or undefined while it is within its budget. */
export function budgetReached(
  tenant: string,
  budget: TenantBudget | undefined,
  usage: { readonly day: Usage; readonly month: Usage },
): string | undefined {
  for (const period of ['day', 'month'] as const) {
    const limits = budget?.[period];
    const used = usage[period];
    const name = period === 'day' ? 'daily' : 'monthly';
    if (limits?.usd !== undefined && used.usd >= limits.usd)
      return `tenant ${tenant} reached its ${name} budget of $${limits.usd} ($${used.usd.toFixed(4)} spent)`;
    if (limits?.tokens !== undefined && used.tokens >= limits.tokens)
      return `tenant ${tenant} reached its ${name} budget of ${limits.tokens} tokens (${used.tokens} used)`;
  }
  return undefined;
}
