import type { ConversationStatus } from '@flotilla/events';
import { decodeSnapshot, type ConversationSnapshot } from '@flotilla/state';
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';

/**
 * Every conversation's snapshot, kept in memory from a watch on the snapshot bucket: lists,
 * counts and run admission read it without touching NATS. It trails the log by the projector's
 * lag (milliseconds); single-conversation reads go to the log instead (read-your-writes).
 */
export class ConversationIndex {
  readonly #byTenant = new Map<string, Map<string, ConversationSnapshot>>();
  readonly #runningByTenant = new Map<string, number>();
  #running = 0;
  #ready = false;
  #stopped = false;
  #iterator: { stop(): void } | undefined;

  constructor(
    readonly kv: KV,
    readonly logger: Logger,
  ) {}

  /** Starts the watch; resolves once the bucket's current contents are loaded. */
  async start(): Promise<void> {
    let markLoaded!: () => void;
    const loaded = new Promise<void>((resolve) => (markLoaded = resolve));
    const run = async (): Promise<void> => {
      while (!this.#stopped) {
        try {
          // the initial load is over when as many entries arrived as the bucket holds, or an update does
          const expected = (await this.kv.status()).values;
          if (expected === 0) markLoaded();
          const iterator = await this.kv.watch();
          this.#iterator = iterator;
          let received = 0;
          for await (const entry of iterator) {
            received += 1;
            if (entry.isUpdate || received >= expected) markLoaded();
            const dot = entry.key.indexOf('.');
            if (dot <= 0) continue;
            const ref = { tenant: entry.key.slice(0, dot), conversation: entry.key.slice(dot + 1) };
            if (entry.operation !== 'PUT') {
              this.#remove(ref.tenant, ref.conversation);
              continue;
            }
            const decoded = decodeSnapshot(entry.value, ref);
            if (decoded.ok) this.upsert(decoded.snapshot);
          }
        } catch (error) {
          if (this.#stopped) return;
          this.logger.warn({ err: error }, 'conversation index watch failed; restarting it');
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    };
    void run();
    await Promise.race([loaded, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    this.#ready = true;
  }

  stop(): void {
    this.#stopped = true;
    this.#iterator?.stop();
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** Record a snapshot this gateway just computed (newer ones win; never goes back). */
  upsert(snapshot: ConversationSnapshot): void {
    let tenant = this.#byTenant.get(snapshot.tenant);
    if (!tenant) this.#byTenant.set(snapshot.tenant, (tenant = new Map()));
    const previous = tenant.get(snapshot.conversation);
    if (previous && previous.last_seq > snapshot.last_seq) return;
    this.#countRunning(snapshot.tenant, previous?.status, snapshot.status);
    tenant.set(snapshot.conversation, snapshot);
  }

  forget(tenant: string, conversation: string): void {
    this.#remove(tenant, conversation);
  }

  get(tenant: string, conversation: string): ConversationSnapshot | undefined {
    return this.#byTenant.get(tenant)?.get(conversation);
  }

  /** Every tenant's conversations (the retention sweep's view). */
  *all(): Iterable<ConversationSnapshot> {
    for (const conversations of this.#byTenant.values()) yield* conversations.values();
  }

  /** The tenant's conversations (unsorted). */
  list(tenant: string): Iterable<ConversationSnapshot> {
    return this.#byTenant.get(tenant)?.values() ?? [];
  }

  count(tenant: string, status?: ConversationStatus): number {
    const all = this.#byTenant.get(tenant);
    if (!all) return 0;
    if (!status) return all.size;
    let count = 0;
    for (const snapshot of all.values()) if (snapshot.status === status) count += 1;
    return count;
  }

  running(tenant?: string): number {
    return tenant === undefined ? this.#running : (this.#runningByTenant.get(tenant) ?? 0);
  }

  #remove(tenant: string, conversation: string): void {
    const all = this.#byTenant.get(tenant);
    const previous = all?.get(conversation);
    if (!all || !previous) return;
    this.#countRunning(tenant, previous.status, undefined);
    all.delete(conversation);
    if (all.size === 0) this.#byTenant.delete(tenant);
  }

  #countRunning(tenant: string, before: ConversationStatus | undefined, after: ConversationStatus | undefined): void {
    const delta = (after === 'running' ? 1 : 0) - (before === 'running' ? 1 : 0);
    if (delta === 0) return;
    this.#running += delta;
    this.#runningByTenant.set(tenant, (this.#runningByTenant.get(tenant) ?? 0) + delta);
  }
}
