import { budgetOf, budgetReached, type TenantBudgets, type Usage } from './tenant-budgets.js';
import type { TenantUsageStore } from './tenant-usage-store.js';

export type TenantBudgetGuardOptions = {
  /** How long a tenant's usage read from the bucket is trusted before the next step reads it again. Default 1 s. */
  readonly cacheMs?: number;
  readonly now?: () => Date;
  /** A step's usage could not be added (the step is appended: it is counted short). */
  readonly onError?: (error: unknown, tenant: string) => void;
};

/**
 * The step workers' side of the tenants' budgets: before a step, whether its tenant may still
 * spend (its usage read from the bucket at most once per `cacheMs`, so steps running at once may
 * pass a budget by what they spend together); after a step is appended, its usage added.
 */
export class TenantBudgetGuard {
  readonly #cache = new Map<string, { at: number; day: Usage; month: Usage; period: string }>();
  readonly #options: TenantBudgetGuardOptions;

  constructor(
    readonly budgets: TenantBudgets,
    readonly store: TenantUsageStore,
    options: TenantBudgetGuardOptions = {},
  ) {
    this.#options = options;
  }

  /** Why the tenant's next step may not be taken (its budget reached), or undefined. */
  async reached(tenant: string): Promise<string | undefined> {
    const budget = budgetOf(this.budgets, tenant);
    if (!budget) return undefined;
    const now = this.#now();
    const period = now.toISOString().slice(0, 10);
    let cached = this.#cache.get(tenant);
    if (!cached || cached.period !== period || now.getTime() - cached.at > (this.#options.cacheMs ?? 1_000)) {
      cached = { at: now.getTime(), period, ...(await this.store.read(tenant, now)) };
      this.#cache.set(tenant, cached);
    }
    return budgetReached(tenant, budget, cached);
  }

  /** Adds an appended step's usage to its tenant's day and month (and to what this worker holds of them). */
  spent(tenant: string, usage: Usage): void {
    if (usage.usd === 0 && usage.tokens === 0) return;
    const cached = this.#cache.get(tenant);
    if (cached) this.#cache.set(tenant, { ...cached, day: add(cached.day, usage), month: add(cached.month, usage) });
    this.store.add(tenant, usage, this.#now()).catch((error: unknown) => this.#options.onError?.(error, tenant));
  }

  #now(): Date {
    return this.#options.now ? this.#options.now() : new Date();
  }
}

function add(a: Usage, b: Usage): Usage {
  return { usd: a.usd + b.usd, tokens: a.tokens + b.tokens };
}
