import { z } from 'zod';
import { AddressPolicy } from './address-policy.js';

/** The webhooks service's own variables (the NATS and service ones are libs/runtime's). */
export const WebhooksVariables = {
  maxAttempts: 'FLOTILLA_WEBHOOK_MAX_ATTEMPTS',
  retryBaseMs: 'FLOTILLA_WEBHOOK_RETRY_BASE_MS',
  retryMaxMs: 'FLOTILLA_WEBHOOK_RETRY_MAX_MS',
  timeoutMs: 'FLOTILLA_WEBHOOK_TIMEOUT_MS',
  allowedNetworks: 'FLOTILLA_WEBHOOK_ALLOWED_NETWORKS',
  deadLetterMaxAgeMs: 'FLOTILLA_WEBHOOK_DEAD_LETTER_MAX_AGE_MS',
  deliveryConcurrency: 'FLOTILLA_WEBHOOK_CONCURRENCY',
} as const;

export type WebhooksConfig = {
  /** Attempts of one delivery, the first included, before it is dead-lettered. */
  readonly maxAttempts: number;
  /** The wait after the first failed attempt; it doubles after each (with jitter) up to `retryMaxMs`. */
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** How long one POST may take, connection included. */
  readonly timeoutMs: number;
  /** Which addresses a POST may reach (private ones only where allowed). */
  readonly addresses: AddressPolicy;
  /** How long a dead letter is kept (0: until its webhook is removed). */
  readonly deadLetterMaxAgeMs: number;
  /** Deliveries in flight at once in this process. */
  readonly deliveryConcurrency: number;
};

const Int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const DAY_MS = 24 * 60 * 60 * 1_000;

const Settings = z.object({
  maxAttempts: Int(1, 100),
  retryBaseMs: Int(10, 24 * 60 * 60 * 1_000),
  retryMaxMs: Int(10, 7 * DAY_MS),
  timeoutMs: Int(100, 120_000),
  deadLetterMaxAgeMs: Int(0, 3_650 * DAY_MS),
  deliveryConcurrency: Int(1, 10_000),
});

export const DEFAULT_WEBHOOKS_SETTINGS = {
  maxAttempts: 12,
  retryBaseMs: 5_000,
  retryMaxMs: 60 * 60 * 1_000,
  timeoutMs: 10_000,
  deadLetterMaxAgeMs: 30 * DAY_MS,
  deliveryConcurrency: 64,
} as const;

/** Reads the webhooks service's settings; throws naming the variable. */
export function loadWebhooksConfig(environment: NodeJS.ProcessEnv = process.env): WebhooksConfig {
  const read = (key: keyof typeof DEFAULT_WEBHOOKS_SETTINGS): string | number =>
    environment[WebhooksVariables[key]]?.trim() || DEFAULT_WEBHOOKS_SETTINGS[key];
  const result = Settings.safeParse(
    Object.fromEntries(
      (Object.keys(DEFAULT_WEBHOOKS_SETTINGS) as (keyof typeof DEFAULT_WEBHOOKS_SETTINGS)[]).map((key) => [
        key,
        read(key),
      ]),
    ),
  );
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new Error(`${WebhooksVariables[issue.path[0] as keyof typeof WebhooksVariables]}: ${issue.message}`);
  }
  if (result.data.retryMaxMs < result.data.retryBaseMs)
    throw new Error(
      `${WebhooksVariables.retryMaxMs} must be at least ${WebhooksVariables.retryBaseMs} (${result.data.retryBaseMs})`,
    );
  const addresses = AddressPolicy.parse(
    environment[WebhooksVariables.allowedNetworks] ?? '',
    WebhooksVariables.allowedNetworks,
  );
  return { ...result.data, addresses };
}
