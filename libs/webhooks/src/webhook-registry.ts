import { MAX_WEBHOOKS_PER_TENANT, type CreateWebhookBody } from '@flotilla/api';
import { SecretCipher } from '@flotilla/secrets';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { callNats } from './bucket-call.js';
import { DEFAULT_WEBHOOKS_BUCKET, openWebhooksBucket } from './bucket-setup.js';
import { WebhooksError, WebhooksErrorCode } from './errors.js';
import {
  encryptSecret,
  newWebhookId,
  newWebhookSecret,
  parseStoredWebhook,
  webhookKey,
  type StoredWebhook,
} from './stored-webhook.js';

export type WebhookRegistryOptions = {
  /** The secrets key (32 bytes, libs/secrets' loadSecretsKey): the signing secrets are stored encrypted with it. */
  readonly key: Buffer;
  readonly replicas?: number;
  readonly bucket?: string;
  /** Told of a stored value that does not parse (it is skipped). */
  readonly onCorrupt?: (key: string) => void;
};

/**
 * The tenants' webhook registrations as the gateway manages them: create (the signing secret
 * returned once, stored encrypted), list, get, remove. Every call is confined to one tenant's keys.
 */
export class WebhookRegistry {
  readonly #kv: KV;
  readonly #cipher: SecretCipher;
  readonly #onCorrupt: (key: string) => void;

  private constructor(kv: KV, cipher: SecretCipher, onCorrupt: (key: string) => void) {
    this.#kv = kv;
    this.#cipher = cipher;
    this.#onCorrupt = onCorrupt;
  }

  static async open(nc: NatsConnection, options: WebhookRegistryOptions): Promise<WebhookRegistry> {
    const cipher = new SecretCipher(options.key); // checks the key before touching NATS
    return new WebhookRegistry(
      await openWebhooksBucket(nc, options.replicas ?? 1, options.bucket ?? DEFAULT_WEBHOOKS_BUCKET),
      cipher,
      options.onCorrupt ?? (() => undefined),
    );
  }

  /**
   * Registers a webhook that gets the events of commits after `startsAfterStreamSeq` (the events
   * stream's last sequence now). Returns the registration and its signing secret, which is
   * never returned again. A WebhooksError('limit_reached') past MAX_WEBHOOKS_PER_TENANT.
   */
  async create(
    tenant: string,
    body: CreateWebhookBody,
    startsAfterStreamSeq: number,
  ): Promise<{ webhook: StoredWebhook; secret: string }> {
    if ((await this.#keys(tenant)).length >= MAX_WEBHOOKS_PER_TENANT) {
      throw new WebhooksError(
        WebhooksErrorCode.LimitReached,
        `a tenant has at most ${MAX_WEBHOOKS_PER_TENANT} webhooks: remove one first`,
      );
    }
    const id = newWebhookId();
    const secret = newWebhookSecret();
    const webhook: StoredWebhook = {
      v: 1,
      id,
      tenant,
      url: body.url,
      events: [...body.events],
      description: body.description ?? null,
      created_at: new Date().toISOString(),
      starts_after_stream_seq: startsAfterStreamSeq,
      secret: encryptSecret(this.#cipher, tenant, id, secret),
    };
    const key = webhookKey(tenant, id);
    await callNats(`registering webhook ${key}`, () => this.#kv.create(key, JSON.stringify(webhook)));
    return { webhook, secret };
  }

  /** The tenant's webhooks, oldest first. */
  async list(tenant: string): Promise<StoredWebhook[]> {
    const webhooks = await Promise.all((await this.#keys(tenant)).map((key) => this.#read(key)));
    return webhooks
      .filter((webhook) => webhook !== undefined)
      .sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : a.created_at < b.created_at ? -1 : 1));
  }

  get(tenant: string, id: string): Promise<StoredWebhook | undefined> {
    return this.#read(webhookKey(tenant, id));
  }

  /** Removes one webhook (purged: no older revision keeps its secret); false when the tenant has none of that id. */
  async remove(tenant: string, id: string): Promise<boolean> {
    const key = webhookKey(tenant, id);
    const entry = await callNats(`reading webhook ${key}`, () => this.#kv.get(key));
    if (!entry || entry.operation !== 'PUT') return false;
    await callNats(`removing webhook ${key}`, () => this.#kv.purge(key));
    return true;
  }

  async #read(key: string): Promise<StoredWebhook | undefined> {
    const entry = await callNats(`reading webhook ${key}`, () => this.#kv.get(key));
    if (!entry || entry.operation !== 'PUT') return undefined;
    const webhook = parseStoredWebhook(key, entry.value);
    if (!webhook) this.#onCorrupt(key);
    return webhook;
  }

  #keys(tenant: string): Promise<string[]> {
    return callNats(`listing the webhooks of ${tenant}`, async () => {
      const keys: string[] = [];
      for await (const key of await this.#kv.keys(`${tenant}.*`)) keys.push(key);
      return keys;
    });
  }
}
