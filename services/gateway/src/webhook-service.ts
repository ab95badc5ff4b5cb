import type { CreatedWebhook, CreateWebhookBody, DeadLetter, Webhook } from '@flotilla/api';
import type { EventLog } from '@flotilla/log';
import { publicWebhook, WebhooksError, type DeadLetterStore, type WebhookRegistry } from '@flotilla/webhooks';
import type { Logger } from 'pino';
import { ApiError } from './api-error.js';

/** The webhooks' stores: registrations (with the secrets key) and dead letters. */
export type WebhookStores = { readonly registry: WebhookRegistry; readonly deadLetters: DeadLetterStore };

/**
 * Webhooks as the gateway serves them, each confined to the caller's tenant. Registering reads
 * the events stream's last sequence: the webhook gets the events of later commits. The signing
 * secret is in the answer to the creation and never again. Without the secrets key (it encrypts
 * the signing secrets) every call answers 503 secrets_not_configured.
 */
export class WebhookService {
  constructor(
    readonly stores: WebhookStores | undefined,
    readonly log: EventLog,
    readonly logger: Logger,
  ) {}

  async create(tenant: string, body: CreateWebhookBody): Promise<CreatedWebhook> {
    const { registry } = this.#require();
    const streamSeq = (await this.log.jsm.streams.info(this.log.streamName)).state.last_seq;
    const { webhook, secret } = await this.#guard(() => registry.create(tenant, body, streamSeq));
    this.logger.info({ tenant, webhook: webhook.id, events: webhook.events }, 'webhook registered');
    return { ...publicWebhook(webhook), secret };
  }

  async list(tenant: string): Promise<Webhook[]> {
    const { registry } = this.#require();
    return (await this.#guard(() => registry.list(tenant))).map(publicWebhook);
  }

  async get(tenant: string, id: string): Promise<Webhook> {
    const { registry } = this.#require();
    const webhook = await this.#guard(() => registry.get(tenant, id));
    if (!webhook) throw webhookNotFound(id);
    return publicWebhook(webhook);
  }

  /** Removes the webhook, then its dead letters; its deliveries still queued are dropped by the webhooks service. */
  async remove(tenant: string, id: string): Promise<void> {
    const { registry, deadLetters } = this.#require();
    if (!(await this.#guard(() => registry.remove(tenant, id)))) throw webhookNotFound(id);
    await this.#guard(() => deadLetters.removeAll(tenant, id));
    this.logger.info({ tenant, webhook: id }, 'webhook removed');
  }

  async deadLetters(tenant: string, id: string, limit: number): Promise<DeadLetter[]> {
    const { registry, deadLetters } = this.#require();
    if (!(await this.#guard(() => registry.get(tenant, id)))) throw webhookNotFound(id);
    return this.#guard(() =>
      deadLetters.list(tenant, id, limit, (key) =>
        this.logger.error({ key }, 'a dead letter that does not parse: left out'),
      ),
    );
  }

  #require(): WebhookStores {
    if (this.stores) return this.stores;
    throw new ApiError(
      503,
      'secrets_not_configured',
      'Webhooks are not available on this gateway: their signing secrets are stored encrypted with the secrets key. Set FLOTILLA_SECRETS_KEY_FILE (a file holding `openssl rand -base64 32`), the same for the gateway and the webhooks service, and restart them.',
    );
  }

  async #guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof WebhooksError)) throw error;
      if (error.code === 'limit_reached') throw new ApiError(409, 'webhook_limit_reached', `${error.message}.`);
      this.logger.warn({ err: error }, 'the webhooks buckets are unavailable');
      throw new ApiError(503, 'unavailable', 'The webhooks buckets are not reachable right now; retry.', undefined, 1);
    }
  }
}

function webhookNotFound(id: string): ApiError {
  return new ApiError(404, 'webhook_not_found', `No webhook "${id}".`);
}
