import { Buckets, openBucket } from '@flotilla/bus';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TenantId } from '@flotilla/events';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';

export const DEFAULT_API_KEYS_BUCKET = Buckets.apiKeys;

const KeyRecord = z.strictObject({ tenant: TenantId, name: z.string(), created_at: z.string() });
export type KeyRecord = z.infer<typeof KeyRecord>;

/** The KV key of an API key: its SHA-256 (the plain key is never stored). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A fresh API key: `flt_` and 32 random bytes, base64url. */
export function newApiKey(): string {
  return `flt_${randomBytes(32).toString('base64url')}`;
}

/** Constant-time comparison of two keys by their hashes. */
export function sameKey(a: string, b: string): boolean {
  return timingSafeEqual(Buffer.from(hashApiKey(a), 'hex'), Buffer.from(hashApiKey(b), 'hex'));
}

type Cached = { readonly record: KeyRecord | null; readonly until: number };

/**
 * API keys → tenants, in a KV bucket keyed by the key's hash. Lookups are cached briefly
 * (a revoked key stops working within `cacheMs`), misses a little more briefly.
 */
export class ApiKeyStore {
  readonly #cache = new Map<string, Cached>();

  private constructor(
    readonly kv: KV,
    readonly cacheMs: number,
  ) {}

  static async open(
    nc: NatsConnection,
    options: { bucket?: string; replicas?: number; cacheMs?: number } = {},
  ): Promise<ApiKeyStore> {
    const kv = await openBucket(nc, options.bucket ?? DEFAULT_API_KEYS_BUCKET, {
      history: 1,
      replicas: options.replicas ?? 1,
      description: 'Flotilla API keys (SHA-256 of each key → tenant)',
    });
    return new ApiKeyStore(kv, options.cacheMs ?? 30_000);
  }

  /** Store a key for a tenant (idempotent). */
  async put(key: string, tenant: string, name: string): Promise<void> {
    const record: KeyRecord = { tenant, name, created_at: new Date().toISOString() };
    await this.kv.put(hashApiKey(key), JSON.stringify(record));
    this.#cache.delete(hashApiKey(key));
  }

  /** Mint a new key for a tenant; the plain key is returned once. */
  async create(tenant: string, name: string): Promise<string> {
    const key = newApiKey();
    await this.put(key, tenant, name);
    return key;
  }

  /** The key's tenant, or null for an unknown key. */
  async resolve(key: string): Promise<KeyRecord | null> {
    const hash = hashApiKey(key);
    const now = Date.now();
    const cached = this.#cache.get(hash);
    if (cached && cached.until > now) return cached.record;
    const entry = await this.kv.get(hash);
    let record: KeyRecord | null = null;
    if (entry && entry.operation === 'PUT') {
      const parsed = KeyRecord.safeParse(safeJson(entry.string()));
      record = parsed.success ? parsed.data : null;
    }
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(hash, { record, until: now + (record ? this.cacheMs : Math.min(this.cacheMs, 2_000)) });
    return record;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
