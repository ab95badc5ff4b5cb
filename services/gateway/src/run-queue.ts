import { Buckets, openBucket } from '@flotilla/bus';
import type { ConversationRef } from '@flotilla/log';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** A run waiting for a slot of its tenant's (FLOTILLA_MAX_RUNNING_PER_TENANT). */
export type QueuedRun = {
  readonly conversation: string;
  readonly queued_at: string;
  /** The KV revision of its entry now (a claim's compare-and-set expects it). */
  readonly revision: number;
  /** The gateway starting it now, and since when (epoch ms): another takes over a claim older than CLAIM_TIMEOUT_MS. */
  readonly claimed_by?: string;
  readonly claimed_at?: number;
};

type Entry = { readonly queued_at: string; readonly claimed_by?: string; readonly claimed_at?: number };

/** A claim older than this was left by a gateway that stopped while starting the run: another may take it. */
export const CLAIM_TIMEOUT_MS = 30_000;

/**
 * The runs waiting for a slot, per tenant, in the order they came: a KV bucket keyed
 * `<tenant>.<conversation>` (one entry per conversation), on the bus so that every gateway sees
 * the same queue and it outlives any of them. Each gateway mirrors the bucket from a watch (the
 * queue positions it shows come from memory); changes go to the bucket with compare-and-set.
 */
export class RunQueue {
  readonly #byTenant = new Map<string, Map<string, QueuedRun>>();
  #stopped = false;
  #iterator: { stop(): void } | undefined;
  #changed: (() => void) | undefined;

  private constructor(
    readonly kv: KV,
    readonly logger: Logger,
  ) {}

  static async open(nc: NatsConnection, logger: Logger, options: { replicas?: number } = {}): Promise<RunQueue> {
    const kv = await openBucket(nc, Buckets.runQueue, {
      history: 1,
      replicas: options.replicas ?? 1,
      description: 'Flotilla runs waiting for a slot of their tenant, in order',
    });
    return new RunQueue(kv, logger);
  }

  /** Starts mirroring the bucket; resolves once its current contents are loaded. */
  async start(): Promise<void> {
    let markLoaded!: () => void;
    const loaded = new Promise<void>((resolve) => (markLoaded = resolve));
    const run = async (): Promise<void> => {
      while (!this.#stopped) {
        try {
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
            const tenant = entry.key.slice(0, dot);
            const conversation = entry.key.slice(dot + 1);
            if (entry.operation !== 'PUT') this.#remove(tenant, conversation);
            else this.#put(tenant, conversation, entry.revision, parseEntry(entry.value));
            this.#changed?.();
          }
        } catch (error) {
          if (this.#stopped) return;
          this.logger.warn({ err: error }, 'run queue watch failed; restarting it');
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    };
    void run();
    await Promise.race([loaded, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  }

  stop(): void {
    this.#stopped = true;
    this.#iterator?.stop();
  }

  /** Called after each change the watch brings (one listener: the starter). */
  onChange(listener: () => void): void {
    this.#changed = listener;
  }

  /** Queues a run at the back of its tenant's queue; false when it is queued already (it keeps its place). */
  async enqueue(ref: ConversationRef): Promise<boolean> {
    const entry: Entry = { queued_at: new Date().toISOString() };
    try {
      const revision = await this.kv.create(key(ref), JSON.stringify(entry));
      this.#put(ref.tenant, ref.conversation, revision, entry);
      return true;
    } catch (error) {
      if (isExists(error)) return false;
      throw error;
    }
  }

  /** Takes a run out of the queue (started, paused, or gone); at `revision` only when given (a claim's). */
  async remove(ref: ConversationRef, revision?: number): Promise<void> {
    // asked of the bucket even when this gateway's mirror has no entry: another gateway may have queued it a moment ago
    try {
      await this.kv.delete(key(ref), revision === undefined ? undefined : { previousSeq: revision });
    } catch (error) {
      if (revision === undefined) throw error;
      return; // another gateway changed it meanwhile: the watch brings what it did
    }
    this.#remove(ref.tenant, ref.conversation);
  }

  /**
   * Claims the queued run for this gateway with compare-and-set on the revision it read: of two
   * gateways claiming one run, one wins. Resolves to the claim's revision, or undefined when lost.
   */
  async claim(tenant: string, run: QueuedRun, holder: string): Promise<number | undefined> {
    const entry: Entry = { queued_at: run.queued_at, claimed_by: holder, claimed_at: Date.now() };
    try {
      return await this.kv.update(key({ tenant, conversation: run.conversation }), JSON.stringify(entry), run.revision);
    } catch {
      return undefined;
    }
  }

  /** Where the conversation's run is in its tenant's queue (1 = next), or null when none waits. */
  position(ref: ConversationRef): { readonly position: number; readonly queued_at: string } | null {
    const queue = this.#byTenant.get(ref.tenant);
    const run = queue?.get(ref.conversation);
    if (!queue || !run) return null;
    let ahead = 0;
    for (const other of queue.values()) if (before(other, run)) ahead += 1;
    return { position: ahead + 1, queued_at: run.queued_at };
  }

  /** Runs waiting for the tenant's slots. */
  waiting(tenant: string): number {
    return this.#byTenant.get(tenant)?.size ?? 0;
  }

  /** Tenants with runs waiting. */
  tenants(): string[] {
    return [...this.#byTenant.keys()];
  }

  /** The tenant's queued runs in order. */
  queued(tenant: string): QueuedRun[] {
    return [...(this.#byTenant.get(tenant)?.values() ?? [])].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  }

  #put(tenant: string, conversation: string, revision: number, entry: Entry | undefined): void {
    if (!entry) return;
    let queue = this.#byTenant.get(tenant);
    if (!queue) this.#byTenant.set(tenant, (queue = new Map()));
    queue.set(conversation, {
      conversation,
      queued_at: entry.queued_at,
      revision,
      ...(entry.claimed_by ? { claimed_by: entry.claimed_by, claimed_at: entry.claimed_at ?? 0 } : {}),
    });
  }

  #remove(tenant: string, conversation: string): void {
    const queue = this.#byTenant.get(tenant);
    if (!queue) return;
    queue.delete(conversation);
    if (queue.size === 0) this.#byTenant.delete(tenant);
  }
}

/**
 * Queue order: by the time each run was queued, then by revision (the bucket's revisions only
 * grow). Not by revision alone: a claim rewrites its entry (a later revision) and keeps its place.
 */
function before(a: QueuedRun, b: QueuedRun): boolean {
  return a.queued_at < b.queued_at || (a.queued_at === b.queued_at && a.revision < b.revision);
}

function key(ref: ConversationRef): string {
  return `${ref.tenant}.${ref.conversation}`;
}

function parseEntry(value: Uint8Array): Entry | undefined {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(value)) as Partial<Entry>;
    return typeof parsed.queued_at === 'string' ? (parsed as Entry) : undefined;
  } catch {
    return undefined;
  }
}

function isExists(error: unknown): boolean {
  return error instanceof Error && /wrong last sequence|exists/i.test(error.message);
}
