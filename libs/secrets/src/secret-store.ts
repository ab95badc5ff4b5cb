import { JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_SECRETS_BUCKET, openSecretsBucket } from './bucket-setup.js';
import { SecretsError, SecretsErrorCode } from './errors.js';
import { SecretCipher } from './secret-cipher.js';
import { assertSecretName, assertSecretValue } from './secret-rules.js';
import { nameOfKey, scopePrefix, secretKey, type SecretScope } from './secret-scope.js';

export type SecretStoreOptions = {
  /** The AES-256 key (32 bytes), e.g. from loadSecretsKey. */
  readonly key: Buffer;
  /** KV bucket name; default flotilla_secrets. */
  readonly bucket?: string;
  /** 1 locally, 3 in a cluster. Only used when the bucket is created. */
  readonly replicas?: number;
};

/**
 * Secrets by name, per tenant (defaults) and per conversation, in their own KV bucket: each value
 * encrypted (AES-256-GCM, a fresh nonce each time, its KV key as additional data), names in
 * clear in the KV keys. Values leave the store only through `reveal`, for the sandbox.
 */
export class SecretStore {
  readonly #cipher: SecretCipher;
  /** The bucket's ciphertexts by key, kept by a watch once `follow` loaded them (the tool runner's reads stay in memory). */
  #followed: Map<string, Uint8Array> | undefined;
  #watch: { stop(): void } | undefined;
  #stopped = false;

  private constructor(
    readonly kv: KV,
    readonly bucket: string,
    cipher: SecretCipher,
  ) {
    this.#cipher = cipher;
  }

  static async open(nc: NatsConnection, options: SecretStoreOptions): Promise<SecretStore> {
    const cipher = new SecretCipher(options.key); // checks the key before touching NATS
    const bucket = options.bucket ?? DEFAULT_SECRETS_BUCKET;
    return new SecretStore(await openSecretsBucket(nc, bucket, options.replicas ?? 1), bucket, cipher);
  }

  /** Creates or replaces one secret. */
  async set(scope: SecretScope, name: string, value: string): Promise<void> {
    assertSecretName(name);
    assertSecretValue(value);
    const key = secretKey(scope, name);
    await this.#call(`setting ${key}`, () => this.kv.put(key, this.#cipher.encrypt(key, value)));
  }

  /** Removes one secret; false when there was none. */
  async remove(scope: SecretScope, name: string): Promise<boolean> {
    assertSecretName(name);
    const key = secretKey(scope, name);
    const entry = await this.#call(`reading ${key}`, () => this.kv.get(key));
    if (!entry || entry.operation !== 'PUT') return false;
    await this.#call(`removing ${key}`, () => this.kv.purge(key));
    return true;
  }

  /** The names of a scope's secrets, sorted. Never a value (nothing is decrypted). */
  async names(scope: SecretScope): Promise<string[]> {
    return (await this.#keys(scope)).map(nameOfKey).sort();
  }

  /** The values a conversation's sandbox gets: the tenant's defaults overlaid with the conversation's own. */
  async reveal(ref: { tenant: string; conversation: string }): Promise<Record<string, string>> {
    const followed = this.#followed;
    const values = (scope: SecretScope): Promise<[string, string][]> => (followed ? Promise.resolve(this.#followedValues(followed, scope)) : this.#values(scope));
    const [defaults, own] = await Promise.all([values({ tenant: ref.tenant }), values(ref)]);
    const merged = new Map([...defaults, ...own]);
    return Object.fromEntries([...merged].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /**
   * Keep the bucket in memory from a watch (values stay encrypted until `reveal`), so that each
   * reveal costs no request: for the service that reveals at every batch of actions. Resolves once
   * the current contents are loaded (or after 10 s, reading the bucket meanwhile); while the
   * watch restarts after a failure, reveal reads the bucket.
   */
  async follow(): Promise<void> {
    let markLoaded!: () => void;
    const loaded = new Promise<void>((resolve) => (markLoaded = resolve));
    const run = async (): Promise<void> => {
      while (!this.#stopped) {
        const entries = new Map<string, Uint8Array>();
        try {
          const expected = (await this.kv.status()).values;
          const iterator = await this.kv.watch();
          this.#watch = iterator;
          let received = 0;
          const ready = (): void => {
            this.#followed = entries;
            markLoaded();
          };
          if (expected === 0) ready();
          for await (const entry of iterator) {
            received += 1;
            if (entry.operation === 'PUT') entries.set(entry.key, entry.value);
            else entries.delete(entry.key);
            if (entry.isUpdate || received >= expected) ready();
          }
        } catch {
          // fall through: read the bucket until the watch is back
        }
        this.#followed = undefined;
        if (!this.#stopped) await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    void run();
    await Promise.race([loaded, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  }

  /** Stop following the bucket. */
  close(): void {
    this.#stopped = true;
    this.#followed = undefined;
    this.#watch?.stop();
  }

  #followedValues(followed: ReadonlyMap<string, Uint8Array>, scope: SecretScope): [string, string][] {
    const prefix = `${scopePrefix(scope)}.`;
    const pairs: [string, string][] = [];
    for (const [key, value] of followed) {
      // the name is the last token: a conversation's keys are not under the tenant's defaults
      if (key.startsWith(prefix) && !key.slice(prefix.length).includes('.')) pairs.push([nameOfKey(key), this.#cipher.decrypt(key, value)]);
    }
    return pairs;
  }

  /** Removes every secret of one scope: a conversation's own (on delete), or the tenant's defaults. */
  async removeAll(scope: SecretScope): Promise<void> {
    for (const key of await this.#keys(scope)) await this.#call(`removing ${key}`, () => this.kv.purge(key));
  }

  async #keys(scope: SecretScope): Promise<string[]> {
    const filter = `${scopePrefix(scope)}.*`;
    return this.#call(`listing ${filter}`, async () => {
      const keys: string[] = [];
      for await (const key of await this.kv.keys(filter)) keys.push(key);
      return keys;
    });
  }

  async #values(scope: SecretScope): Promise<[string, string][]> {
    const keys = await this.#keys(scope);
    return Promise.all(
      keys.map(async (key): Promise<[string, string] | undefined> => {
        const entry = await this.#call(`reading ${key}`, () => this.kv.get(key));
        if (!entry || entry.operation !== 'PUT') return undefined; // removed since it was listed
        return [nameOfKey(key), this.#cipher.decrypt(key, entry.value)];
      }),
    ).then((pairs) => pairs.filter((pair) => pair !== undefined));
  }

  async #call<T>(what: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof SecretsError) throw error;
      const message = `${what} in the secrets bucket ${this.bucket} failed: ${(error as Error).message}`;
      throw new SecretsError(error instanceof JetStreamApiError ? SecretsErrorCode.BucketUnavailable : SecretsErrorCode.Unavailable, message, { cause: error });
    }
  }
}
