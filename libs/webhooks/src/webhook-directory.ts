import { SecretCipher } from '@flotilla/secrets';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { callNats } from './bucket-call.js';
import { DEFAULT_WEBHOOKS_BUCKET, openWebhooksBucket } from './bucket-setup.js';
import { WebhooksError, WebhooksErrorCode } from './errors.js';
import { decryptSecret, parseStoredWebhook, type StoredWebhook } from './stored-webhook.js';

export type WebhookDirectoryOptions = {
  /** The secrets key the signing secrets were encrypted with. */
  readonly key: Buffer;
  readonly replicas?: number;
  readonly bucket?: string;
  /** How long `caughtUp` waits for the watch (default 5 s). */
  readonly catchUpTimeoutMs?: number;
  /** Told of a stored value that does not parse (it is left out), and of a watch that failed (it restarts). */
  readonly onCorrupt?: (key: string) => void;
  readonly onWatchError?: (error: unknown) => void;
};

type Waiter = { readonly revision: number; resolve(): void };

/**
 * Every tenant's webhooks in memory, kept by a watch of the registrations bucket: what the webhooks
 * service delivers to. Lookups cost no request; `caughtUp` makes sure a registration written before
 * a given moment is seen.
 */
export class WebhookDirectory {
  readonly #kv: KV;
  readonly #cipher: SecretCipher;
  readonly #options: WebhookDirectoryOptions;
  readonly #byTenant = new Map<string, Map<string, StoredWebhook>>();
  /** The highest bucket revision the watch delivered. */
  #seen = 0;
  #loaded = false;
  #waiters: Waiter[] = [];
  #watch: { stop(): void } | undefined;
  #stopped = false;

  private constructor(kv: KV, cipher: SecretCipher, options: WebhookDirectoryOptions) {
    this.#kv = kv;
    this.#cipher = cipher;
    this.#options = options;
  }

  /** Opens the bucket (creating it when missing) and loads it: resolves once its current contents are in memory. */
  static async follow(nc: NatsConnection, options: WebhookDirectoryOptions): Promise<WebhookDirectory> {
    const cipher = new SecretCipher(options.key); // checks the key before touching NATS
    const kv = await openWebhooksBucket(nc, options.replicas ?? 1, options.bucket ?? DEFAULT_WEBHOOKS_BUCKET);
    const directory = new WebhookDirectory(kv, cipher, options);
    await directory.#start();
    return directory;
  }

  /** True once the bucket's contents were loaded. */
  get loaded(): boolean {
    return this.#loaded;
  }

  /** The tenant's webhooks (as last seen). */
  forTenant(tenant: string): StoredWebhook[] {
    return [...(this.#byTenant.get(tenant)?.values() ?? [])];
  }

  find(tenant: string, id: string): StoredWebhook | undefined {
    return this.#byTenant.get(tenant)?.get(id);
  }

  /** The signing secret of a webhook; WebhooksError('corrupt') when it does not decrypt under this key. */
  secretOf(webhook: StoredWebhook): string {
    return decryptSecret(this.#cipher, webhook);
  }

  /**
   * Resolves once the directory holds every registration written before this call (the bucket's
   * last revision now, reached by the watch); a WebhooksError('unavailable') after the timeout.
   * A commit appended after a registration was written is decided on with that registration.
   */
  async caughtUp(): Promise<void> {
    const revision = (await callNats('reading the webhooks bucket', () => this.#kv.status())).streamInfo.state.last_seq;
    if (this.#loaded && this.#seen >= revision) return;
    const timeoutMs = this.#options.catchUpTimeoutMs ?? 5_000;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((waiter) => waiter !== entry);
        reject(
          new WebhooksError(
            WebhooksErrorCode.Unavailable,
            `the watch of the webhooks bucket did not reach revision ${revision} within ${timeoutMs} ms (it is at ${this.#seen})`,
          ),
        );
      }, timeoutMs);
      const entry: Waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.#waiters.push(entry);
    });
  }

  close(): void {
    this.#stopped = true;
    this.#watch?.stop();
  }

  async #start(): Promise<void> {
    let markLoaded!: () => void;
    const loaded = new Promise<void>((resolve) => (markLoaded = resolve));
    const run = async (): Promise<void> => {
      while (!this.#stopped) {
        try {
          // a (re)started watch delivers the current contents first: they replace the directory once all are in
          const fresh = new Map<string, Map<string, StoredWebhook>>();
          let live = false;
          const goLive = (): void => {
            live = true;
            this.#byTenant.clear();
            for (const [tenant, webhooks] of fresh) this.#byTenant.set(tenant, webhooks);
            this.#loaded = true;
            markLoaded();
          };
          const empty = (await this.#kv.status()).values === 0;
          const iterator = await this.#kv.watch();
          this.#watch = iterator;
          if (empty) goLive();
          for await (const entry of iterator) {
            this.#apply(live ? this.#byTenant : fresh, entry.key, entry.operation === 'PUT' ? entry.value : undefined);
            this.#seen = Math.max(this.#seen, entry.revision);
            // the last entry of the current contents, and every one after, is an update
            if (entry.isUpdate && !live) goLive();
            if (live) this.#release();
          }
        } catch (error) {
          this.#options.onWatchError?.(error);
        }
        if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    void run();
    await loaded;
  }

  /** One entry of the watch: a registration put (value), or removed (undefined). */
  #apply(into: Map<string, Map<string, StoredWebhook>>, key: string, value: Uint8Array | undefined): void {
    const dot = key.indexOf('.');
    const tenant = key.slice(0, dot);
    if (value === undefined) {
      into.get(tenant)?.delete(key.slice(dot + 1));
      return;
    }
    const webhook = parseStoredWebhook(key, value);
    if (!webhook) {
      this.#options.onCorrupt?.(key);
      into.get(tenant)?.delete(key.slice(dot + 1));
      return;
    }
    let webhooks = into.get(tenant);
    if (!webhooks) into.set(tenant, (webhooks = new Map()));
    webhooks.set(webhook.id, webhook);
  }

  #release(): void {
    const ready = this.#waiters.filter((waiter) => waiter.revision <= this.#seen);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((waiter) => waiter.revision > this.#seen);
    for (const waiter of ready) waiter.resolve();
  }
}
