import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { callBucket } from './bucket-call.js';
import { DEFAULT_SECRETS_BUCKET, openSecretsBucket } from './bucket-setup.js';
import { SecretCipher } from './secret-cipher.js';
import { nameOfKey, scopePrefix, type SecretScope } from './secret-scope.js';

export type SecretReaderOptions = {
  /** The AES-256 key (32 bytes), e.g. from loadSecretsKey. */
  readonly key: Buffer;
  /** The values' KV bucket; default flotilla_secrets. */
  readonly bucket?: string;
  /** 1 locally, 3 in a cluster. Only used when the bucket is created. */
  readonly replicas?: number;
};

/**
 * The side that decrypts secrets for a conversation's sandbox (the tool runner). It cannot set
 * or remove one: values leave the secrets bucket only through `reveal`.
 */
export class SecretReader {
  readonly #cipher: SecretCipher;
  readonly #kv: KV;
  /** The bucket's ciphertexts by key, kept by a watch once `follow` loaded them (reads stay in memory). */
  #followed: Map<string, Uint8Array> | undefined;
  #watch: { stop(): void } | undefined;
  #stopped = false;

  private constructor(
    kv: KV,
    readonly bucket: string,
    cipher: SecretCipher,
  ) {
    this.#kv = kv;
    this.#cipher = cipher;
  }

  /** Opens the secrets bucket, creating it when missing. */
  static async open(nc: NatsConnection, options: SecretReaderOptions): Promise<SecretReader> {
    const cipher = new SecretCipher(options.key); // checks the key before touching NATS
    const bucket = options.bucket ?? DEFAULT_SECRETS_BUCKET;
    return new SecretReader(await openSecretsBucket(nc, bucket, options.replicas ?? 1), bucket, cipher);
  }

  /** The values a conversation's sandbox gets: the tenant's defaults overlaid with the conversation's own. */
  async reveal(ref: { tenant: string; conversation: string }): Promise<Record<string, string>> {
    const followed = this.#followed;
    const values = (scope: SecretScope): Promise<[string, string][]> =>
      followed ? Promise.resolve(this.#followedValues(followed, scope)) : this.#read(scope);
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
          const expected = (await this.#kv.status()).values;
          const iterator = await this.#kv.watch();
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
      if (key.startsWith(prefix) && !key.slice(prefix.length).includes('.'))
        pairs.push([nameOfKey(key), this.#cipher.decrypt(key, value)]);
    }
    return pairs;
  }

  /** A scope's values read from the bucket (a listing, then one get per key). */
  async #read(scope: SecretScope): Promise<[string, string][]> {
    const filter = `${scopePrefix(scope)}.*`;
    const keys = await callBucket(this.bucket, `listing ${filter}`, async () => {
      const listed: string[] = [];
      for await (const key of await this.#kv.keys(filter)) listed.push(key);
      return listed;
    });
    return Promise.all(
      keys.map(async (key): Promise<[string, string] | undefined> => {
        const entry = await callBucket(this.bucket, `reading ${key}`, () => this.#kv.get(key));
        if (!entry || entry.operation !== 'PUT') return undefined; // removed since it was listed
        return [nameOfKey(key), this.#cipher.decrypt(key, entry.value)];
      }),
    ).then((pairs) => pairs.filter((pair) => pair !== undefined));
  }
}
