import { Buckets, openBucket } from '@flotilla/bus';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { NO_USAGE, periodsOf, type Usage } from './tenant-budgets.js';

/** Compare-and-set attempts for one addition before it gives up (writers of one tenant's key racing). */
const MAX_ATTEMPTS = 20;

/**
 * What each tenant's steps spent per UTC day and month, in a KV bucket keyed
 * `<tenant>.day.<YYYY-MM-DD>` and `<tenant>.month.<YYYY-MM>` (`{usd, tokens}`), added to with
 * compare-and-set by the step workers as they append steps' `llm_usage` events, read by the
 * step workers (budgets) and the gateway (the operator's usage route).
 */
export class TenantUsageStore {
  /** Per key: the addition waiting for the one being written (steps finishing meanwhile join it: one write for all). */
  readonly #waiting = new Map<string, { usage: Usage; readonly done: Promise<void> }>();
  readonly #writing = new Map<string, Promise<void>>();

  private constructor(readonly kv: KV) {}

  static async open(nc: NatsConnection, options: { replicas?: number } = {}): Promise<TenantUsageStore> {
    return new TenantUsageStore(
      await openBucket(nc, Buckets.tenantUsage, {
        history: 1,
        replicas: options.replicas ?? 1,
        description: "Flotilla tenants' model usage per UTC day and month",
      }),
    );
  }

  /** Adds a step's usage to its tenant's day and month. */
  async add(tenant: string, usage: Usage, at: Date): Promise<void> {
    const { day, month } = periodsOf(at);
    await Promise.all([this.#add(`${tenant}.day.${day}`, usage), this.#add(`${tenant}.month.${month}`, usage)]);
  }

  /** The tenant's usage in the day and month `at` falls in. */
  async read(tenant: string, at: Date): Promise<{ day: Usage; month: Usage }> {
    const { day, month } = periodsOf(at);
    const [dayUsage, monthUsage] = await Promise.all([
      this.#get(`${tenant}.day.${day}`),
      this.#get(`${tenant}.month.${month}`),
    ]);
    return { day: dayUsage.usage, month: monthUsage.usage };
  }

  /** Every tenant's usage in the day and month `at` falls in (tenants that spent nothing in either are absent). */
  async all(at: Date): Promise<Map<string, { day: Usage; month: Usage }>> {
    const { day, month } = periodsOf(at);
    const tenants = new Map<string, { day: Usage; month: Usage }>();
    const keys: string[] = [];
    for await (const key of await this.kv.keys())
      if (key.endsWith(`.day.${day}`) || key.endsWith(`.month.${month}`)) keys.push(key);
    for (const key of keys) {
      const [tenant, period] = splitKey(key);
      const current = tenants.get(tenant) ?? { day: NO_USAGE, month: NO_USAGE };
      const { usage } = await this.#get(key);
      tenants.set(tenant, period === 'day' ? { ...current, day: usage } : { ...current, month: usage });
    }
    return tenants;
  }

  /**
   * One write at a time per key in this process, what comes meanwhile added together into the
   * next: writers racing on a key are then the processes, not each of their steps.
   */
  #add(key: string, usage: Usage): Promise<void> {
    const waiting = this.#waiting.get(key);
    if (waiting) {
      waiting.usage = { usd: waiting.usage.usd + usage.usd, tokens: waiting.usage.tokens + usage.tokens };
      return waiting.done;
    }
    const previous = this.#writing.get(key) ?? Promise.resolve();
    const entry: { usage: Usage; done: Promise<void> } = {
      usage,
      done: previous
        .catch(() => undefined)
        .then(() => {
          this.#waiting.delete(key);
          return this.#write(key, entry.usage);
        }),
    };
    this.#waiting.set(key, entry);
    this.#writing.set(key, entry.done);
    void entry.done
      .finally(() => {
        if (this.#writing.get(key) === entry.done) this.#writing.delete(key);
      })
      .catch(() => undefined);
    return entry.done;
  }

  async #write(key: string, usage: Usage): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      const current = await this.#get(key);
      const next = JSON.stringify({ usd: current.usage.usd + usage.usd, tokens: current.usage.tokens + usage.tokens });
      try {
        if (current.revision === 0) await this.kv.create(key, next);
        else await this.kv.update(key, next, current.revision);
        return;
      } catch {
        // another process wrote first: read again and add to what it wrote, after a moment that keeps racers apart
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * (attempt + 1)));
      }
    }
    throw new Error(`could not add to ${key}: ${MAX_ATTEMPTS} writers in a row got there first`);
  }

  async #get(key: string): Promise<{ usage: Usage; revision: number }> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT' || entry.length === 0)
      return { usage: NO_USAGE, revision: entry?.revision ?? 0 };
    const parsed = entry.json<Partial<Usage>>();
    return { usage: { usd: Number(parsed.usd) || 0, tokens: Number(parsed.tokens) || 0 }, revision: entry.revision };
  }
}

/** `<tenant>.day.<date>` → [tenant, 'day'] (a tenant holds no dot: it is a subject token). */
function splitKey(key: string): [string, string] {
  const parts = key.split('.');
  return [parts[0]!, parts[1]!];
}
