import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { callBucket } from './bucket-call.js';
import {
  DEFAULT_SECRET_NAMES_BUCKET,
  DEFAULT_SECRETS_BUCKET,
  openSecretNamesBucket,
  openSecretsBucket,
} from './bucket-setup.js';
import { SecretCipher } from './secret-cipher.js';
import { assertSecretName, assertSecretValue } from './secret-rules.js';
import { nameOfKey, scopePrefix, secretKey, type SecretScope } from './secret-scope.js';

export type SecretWriterOptions = {
  /** The AES-256 key (32 bytes), e.g. from loadSecretsKey. */
  readonly key: Buffer;
  /** The values' KV bucket; default flotilla_secrets. Only written, never read. */
  readonly bucket?: string;
  /** The names' KV bucket; default flotilla_secret_names. */
  readonly namesBucket?: string;
  /** 1 locally, 3 in a cluster. Only used when a bucket is created. */
  readonly replicas?: number;
};

/**
 * The side that sets and removes secrets (the gateway). It encrypts values into the secrets
 * bucket but never reads that bucket back (no get, no watch, no listing), so its NATS credential
 * can be denied every read of it. What it lists and checks comes from a second bucket holding
 * the same keys with no value: `{ "updated_at": ISO }`.
 *
 * The two buckets are written in an order that keeps "every stored value has its name": a set
 * writes the name first, a remove takes the value out first, so a crash in between leaves a name
 * without a value (listed, revealed as nothing, fixed by setting or removing it again), never a
 * value injected into sandboxes that no listing shows.
 */
export class SecretWriter {
  readonly #cipher: SecretCipher;
  readonly #values: KV;
  readonly #names: KV;

  private constructor(
    values: KV,
    names: KV,
    readonly bucket: string,
    readonly namesBucket: string,
    cipher: SecretCipher,
  ) {
    this.#values = values;
    this.#names = names;
    this.#cipher = cipher;
  }

  /** Opens both buckets, creating either when missing (stream info and create only). */
  static async open(nc: NatsConnection, options: SecretWriterOptions): Promise<SecretWriter> {
    const cipher = new SecretCipher(options.key); // checks the key before touching NATS
    const bucket = options.bucket ?? DEFAULT_SECRETS_BUCKET;
    const namesBucket = options.namesBucket ?? DEFAULT_SECRET_NAMES_BUCKET;
    const replicas = options.replicas ?? 1;
    const [values, names] = await Promise.all([
      openSecretsBucket(nc, bucket, replicas),
      openSecretNamesBucket(nc, namesBucket, replicas),
    ]);
    return new SecretWriter(values, names, bucket, namesBucket, cipher);
  }

  /** Creates or replaces one secret: its name, then its value. */
  async set(scope: SecretScope, name: string, value: string): Promise<void> {
    assertSecretName(name);
    assertSecretValue(value);
    const key = secretKey(scope, name);
    const ciphertext = this.#cipher.encrypt(key, value);
    await callBucket(this.namesBucket, `naming ${key}`, () =>
      this.#names.put(key, JSON.stringify({ updated_at: new Date().toISOString() })),
    );
    await callBucket(this.bucket, `setting ${key}`, () => this.#values.put(key, ciphertext));
    // A remove of this name that ran meanwhile may have taken the name after our value landed:
    // take the value out too, rather than leave it without its name.
    if ((await this.#nameRevision(key)) === undefined) await this.#purgeValue(key);
  }

  /**
   * Removes one secret: its value, then its name. False when the names bucket has no such name;
   * its value key is purged all the same (a blind write), so no value is left under that name
   * even if one had lost its name.
   */
  async remove(scope: SecretScope, name: string): Promise<boolean> {
    assertSecretName(name);
    const key = secretKey(scope, name);
    const revision = await this.#nameRevision(key);
    if (revision === undefined) {
      await this.#purgeValue(key);
      return false;
    }
    await this.#removeNamed(key, revision);
    return true;
  }

  /**
   * The names of a scope's secrets, sorted, from the names bucket (nothing is decrypted). After a
   * crash in the middle of a set or remove a name may have no value; setting or removing it again
   * mends that.
   */
  async names(scope: SecretScope): Promise<string[]> {
    return (await this.#namedKeys(scope)).map(nameOfKey).sort();
  }

  /**
   * Removes every secret of one scope (a deleted conversation's, or the tenant's defaults), as
   * the names bucket lists them. A value whose name is missing (only a crash while a set and a
   * remove of that name overlapped leaves one) cannot be found without reading the secrets bucket,
   * which this side may not do; `remove(scope, name)` purges it when its name is known.
   */
  async removeAll(scope: SecretScope): Promise<void> {
    for (const key of await this.#namedKeys(scope)) {
      const revision = await this.#nameRevision(key);
      if (revision !== undefined) await this.#removeNamed(key, revision);
    }
  }

  /**
   * Value, then the name (only if it is still the revision we saw), then the value again. A set
   * of the same name that wrote its name after we looked keeps it (and its value, if that landed
   * after our purge). One that wrote its name before we looked but its value between our two
   * purges either sees the name gone and purges its value itself, or saw it still there, in which
   * case our second purge comes after its value. Either way no value outlives its name.
   */
  async #removeNamed(key: string, revision: number): Promise<void> {
    await this.#purgeValue(key);
    const taken = await callBucket(this.namesBucket, `removing the name ${key}`, () =>
      this.#names.purge(key, { previousSeq: revision }).then(
        () => true,
        (error: unknown) => {
          if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence)
            return false; // set again meanwhile
          throw error;
        },
      ),
    );
    if (taken) await this.#purgeValue(key);
  }

  #purgeValue(key: string): Promise<void> {
    return callBucket(this.bucket, `removing ${key}`, () => this.#values.purge(key));
  }

  /** The revision of a key's name, or undefined when it has none. */
  async #nameRevision(key: string): Promise<number | undefined> {
    const entry = await callBucket(this.namesBucket, `reading the name ${key}`, () => this.#names.get(key));
    return entry && entry.operation === 'PUT' ? entry.revision : undefined;
  }

  async #namedKeys(scope: SecretScope): Promise<string[]> {
    const filter = `${scopePrefix(scope)}.*`;
    return callBucket(this.namesBucket, `listing ${filter}`, async () => {
      const keys: string[] = [];
      for await (const key of await this.#names.keys(filter)) keys.push(key);
      return keys;
    });
  }
}
