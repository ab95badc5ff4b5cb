import type { TenantUsage } from '@flotilla/api';
import type { FlotillaClient } from '@flotilla/client';
import { show } from './dom.js';

const REFRESH_MS = 10_000;

/**
 * The tenant's model usage today (UTC) in the top bar, beside its daily budget, and why its runs
 * are stopped when a budget is reached. Hidden where the deployment counts nothing (no budgets).
 */
export class TenantUsageLabel {
  #timer: ReturnType<typeof setInterval> | undefined;
  #client: FlotillaClient | undefined;

  constructor(private readonly element: HTMLElement) {}

  start(client: FlotillaClient): void {
    this.stop();
    this.#client = client;
    void this.refresh();
    this.#timer = setInterval(() => {
      if (document.visibilityState === 'visible') void this.refresh();
    }, REFRESH_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#client = undefined;
    show(this.element, false);
  }

  async refresh(): Promise<void> {
    const client = this.#client;
    if (!client) return;
    const usage = await client.usage().catch(() => undefined);
    if (client !== this.#client) return;
    if (!usage?.counting) {
      show(this.element, false);
      return;
    }
    this.element.textContent = describe(usage);
    this.element.title = `this month: $${usage.usage.month.usd.toFixed(2)}, ${usage.usage.month.tokens.toLocaleString()} tokens${usage.reached ? ` — ${usage.reached}` : ''}`;
    this.element.dataset['reached'] = usage.reached ? 'true' : 'false';
    show(this.element, true);
  }
}

function describe(usage: TenantUsage): string {
  const { usd, tokens, budget } = usage.usage.day;
  const limits = [
    budget?.usd !== undefined ? `$${budget.usd}` : undefined,
    budget?.tokens !== undefined ? `${budget.tokens.toLocaleString()} tokens` : undefined,
  ].filter(Boolean);
  const spent = `today $${usd.toFixed(2)}, ${tokens.toLocaleString()} tokens`;
  return `${spent}${limits.length > 0 ? ` of ${limits.join(' / ')}` : ''}${usage.reached ? ' — budget reached' : ''}`;
}
