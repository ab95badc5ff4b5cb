import { randomBytes } from 'node:crypto';
import { WebhookEventType, WebhookId, WebhookUrl, type Webhook } from '@flotilla/api';
import { TenantId, Timestamp } from '@flotilla/events';
import type { SecretCipher } from '@flotilla/secrets';
import { z } from 'zod';
import { WebhooksError, WebhooksErrorCode } from './errors.js';

/**
 * A registration as the webhooks bucket holds it, under `<tenant>.<id>`. The signing secret is
 * AES-256-GCM under the secrets key (libs/secrets' cipher), bound to this tenant and id: a
 * ciphertext copied to another registration does not decrypt.
 */
export const StoredWebhook = z.strictObject({
  v: z.literal(1),
  id: WebhookId,
  tenant: TenantId,
  url: WebhookUrl,
  events: z.array(WebhookEventType).min(1),
  description: z.string().nullable(),
  created_at: Timestamp,
  /**
   * The events stream's last sequence when it was registered: it gets the events of later
   * commits only, however far behind the webhooks service runs.
   */
  starts_after_stream_seq: z.number().int().nonnegative(),
  /** base64 of the encrypted signing secret. */
  secret: z.string().min(1),
});
export type StoredWebhook = z.infer<typeof StoredWebhook>;

/** The bucket key of a registration. */
export function webhookKey(tenant: string, id: string): string {
  return `${tenant}.${id}`;
}

/** What the secret's ciphertext is bound to (never a key of the secrets bucket: those hold no `:` or `/`). */
function secretContext(tenant: string, id: string): string {
  return `webhook:${tenant}/${id}`;
}

/** A fresh webhook id: `wh_` and 128 random bits. */
export function newWebhookId(): string {
  return `wh_${randomBytes(16).toString('hex')}`;
}

/** A fresh signing secret: `whsec_` and 256 random bits, base64url; the receiver uses the whole string as the HMAC key. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function encryptSecret(cipher: SecretCipher, tenant: string, id: string, secret: string): string {
  return Buffer.from(cipher.encrypt(secretContext(tenant, id), secret)).toString('base64');
}

/** The signing secret of a registration; a WebhooksError('corrupt') when it does not decrypt under this key. */
export function decryptSecret(cipher: SecretCipher, webhook: StoredWebhook): string {
  try {
    return cipher.decrypt(secretContext(webhook.tenant, webhook.id), Buffer.from(webhook.secret, 'base64'));
  } catch (error) {
    throw new WebhooksError(
      WebhooksErrorCode.Corrupt,
      `the signing secret of webhook ${webhook.id} cannot be decrypted: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/** A stored value read back: the registration, or undefined for one that does not parse or is not under its own key. */
export function parseStoredWebhook(key: string, value: Uint8Array): StoredWebhook | undefined {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(value).toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = StoredWebhook.safeParse(json);
  if (!parsed.success || webhookKey(parsed.data.tenant, parsed.data.id) !== key) return undefined;
  return parsed.data;
}

/** The public view: everything but the secret and the bookkeeping. */
export function publicWebhook(webhook: StoredWebhook): Webhook {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events],
    description: webhook.description,
    created_at: webhook.created_at,
  };
}
