import { DeadLetter } from '@flotilla/api';
import { Buckets, openBucket } from '@flotilla/bus';
import { JetStreamApiError, jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { callNats } from './bucket-call.js';
import { WebhooksError, WebhooksErrorCode } from './errors.js';

export const DEFAULT_DEAD_LETTERS_BUCKET = Buckets.webhookDeadLetters;

const STREAM_NOT_FOUND = 10059;

export type DeadLetterBucketSettings = {
  readonly replicas: number;
  /** How long a dead letter is kept; 0 keeps it until its webhook is removed. */
  readonly maxAgeMs: number;
};

/**
 * Dead letters under `<tenant>.<webhook>.<event id>`, one per event a webhook never took. The
 * webhooks service creates the bucket (with its retention) and writes; the gateway binds to it
 * (a bucket not there yet holds no dead letter), lists a webhook's and removes them with it.
 */
export class DeadLetterStore {
  readonly #kv: KV;

  private constructor(kv: KV) {
    this.#kv = kv;
  }

  /** Creates the bucket with these settings, or opens the existing one: the webhooks service. */
  static async create(
    nc: NatsConnection,
    settings: DeadLetterBucketSettings,
    bucket: string = DEFAULT_DEAD_LETTERS_BUCKET,
  ): Promise<DeadLetterStore> {
    try {
      return new DeadLetterStore(
        await openBucket(nc, bucket, {
          history: 1,
          replicas: settings.replicas,
          ...(settings.maxAgeMs > 0 ? { ttl: settings.maxAgeMs } : {}),
          allow_direct: false,
          description: 'Flotilla webhook deliveries that failed every attempt',
        }),
      );
    } catch (error) {
      throw new WebhooksError(WebhooksErrorCode.BucketUnavailable, (error as Error).message, { cause: error });
    }
  }

  /** Binds to the bucket without creating it: the gateway (it reads what the webhooks service wrote). */
  static async bind(nc: NatsConnection, bucket: string = DEFAULT_DEAD_LETTERS_BUCKET): Promise<DeadLetterStore> {
    return new DeadLetterStore(await new Kvm(jetstream(nc)).open(bucket));
  }

  async record(tenant: string, deadLetter: DeadLetter): Promise<void> {
    const key = `${tenant}.${deadLetter.webhook}.${deadLetter.event.id}`;
    await callNats(`recording the dead letter ${key}`, () => this.#kv.put(key, JSON.stringify(deadLetter)));
  }

  /** A webhook's dead letters, the latest attempt first, at most `limit`; those that do not parse are left out (and reported). */
  async list(tenant: string, webhook: string, limit: number, onCorrupt?: (key: string) => void): Promise<DeadLetter[]> {
    const keys = await this.#keys(tenant, webhook);
    const letters = await Promise.all(
      keys.map(async (key) => {
        const entry = await callNats(`reading the dead letter ${key}`, () => this.#kv.get(key));
        if (!entry || entry.operation !== 'PUT') return undefined;
        const parsed = DeadLetter.safeParse(safeJson(entry.string()));
        if (!parsed.success || parsed.data.webhook !== webhook) {
          onCorrupt?.(key);
          return undefined;
        }
        return parsed.data;
      }),
    );
    return letters
      .filter((letter) => letter !== undefined)
      .sort((a, b) =>
        a.last_attempt_at === b.last_attempt_at
          ? a.event.id < b.event.id
            ? -1
            : 1
          : a.last_attempt_at > b.last_attempt_at
            ? -1
            : 1,
      )
      .slice(0, limit);
  }

  /** Removes a webhook's dead letters (when the webhook is removed). */
  async removeAll(tenant: string, webhook: string): Promise<void> {
    for (const key of await this.#keys(tenant, webhook))
      await callNats(`removing the dead letter ${key}`, () => this.#kv.purge(key));
  }

  #keys(tenant: string, webhook: string): Promise<string[]> {
    return callNats(`listing the dead letters of ${webhook}`, async () => {
      const keys: string[] = [];
      try {
        for await (const key of await this.#kv.keys(`${tenant}.${webhook}.*`)) keys.push(key);
      } catch (error) {
        // nothing was ever dead-lettered: the webhooks service has not made the bucket
        if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return [];
        throw error;
      }
      return keys;
    });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
