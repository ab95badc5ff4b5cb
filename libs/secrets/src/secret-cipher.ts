import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SecretsError, SecretsErrorCode } from './errors.js';
import { assertKey, keyIdOf } from './secrets-key.js';

/**
 * A stored value: `version (1 byte) | key id (8) | nonce (12) | AES-256-GCM ciphertext | tag (16)`.
 * The additional authenticated data is the header (version and key id) and the value's KV key,
 * so a ciphertext copied under another key (another tenant, conversation or name) fails to
 * decrypt, as does any changed byte. The key id (a hash of the key) only tells "encrypted with
 * another key" apart from "tampered with" in errors; it reveals nothing usable about the key.
 */
const FORMAT_VERSION = 1;
const KEY_ID_BYTES = 8;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES;
const AAD_LABEL = 'flotilla secret\u0000';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export class SecretCipher {
  readonly #key: Buffer;
  readonly #header: Buffer;

  constructor(key: Buffer) {
    assertKey(key);
    this.#key = Buffer.from(key);
    this.#header = Buffer.concat([Buffer.of(FORMAT_VERSION), keyIdOf(key)]);
  }

  /** The key id as hex (for messages). */
  get keyId(): string {
    return this.#header.subarray(1).toString('hex');
  }

  encrypt(kvKey: string, value: string): Uint8Array {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(this.#aad(this.#header, kvKey));
    const ciphertext = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return Buffer.concat([this.#header, nonce, ciphertext, cipher.getAuthTag()]);
  }

  /** The value stored under `kvKey`, or a SecretsError('corrupt') saying why it is not one. */
  decrypt(kvKey: string, stored: Uint8Array): string {
    const data = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
    const corrupt = (why: string, cause?: unknown): SecretsError =>
      new SecretsError(
        SecretsErrorCode.Corrupt,
        `the secret stored under ${kvKey} ${why}`,
        cause === undefined ? undefined : { cause },
      );
    if (data.length < HEADER_BYTES + NONCE_BYTES + TAG_BYTES)
      throw corrupt(`is too short (${data.length} bytes) to be an encrypted value`);
    if (data[0] !== FORMAT_VERSION) throw corrupt(`has format version ${data[0]}; this build reads ${FORMAT_VERSION}`);
    const header = data.subarray(0, HEADER_BYTES);
    if (!header.equals(this.#header)) {
      throw corrupt(
        `was encrypted with another key (key id ${header.subarray(1).toString('hex')}; this key's id is ${this.keyId}): set FLOTILLA_SECRETS_KEY(_FILE) to the key it was stored with`,
      );
    }
    const nonce = data.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES);
    const tag = data.subarray(data.length - TAG_BYTES);
    const ciphertext = data.subarray(HEADER_BYTES + NONCE_BYTES, data.length - TAG_BYTES);
    let plaintext: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, nonce, { authTagLength: TAG_BYTES });
      decipher.setAAD(this.#aad(header, kvKey));
      decipher.setAuthTag(tag);
      plaintext = Buffer.concat([decipher.update(ciphertext), decipher.final()]);
    } catch (error) {
      throw corrupt(
        'does not authenticate: it was changed, or copied from another secret, conversation or tenant',
        error,
      );
    }
    try {
      return strictUtf8.decode(plaintext);
    } catch (error) {
      throw corrupt('is not UTF-8 once decrypted', error);
    }
  }

  #aad(header: Buffer, kvKey: string): Buffer {
    return Buffer.concat([header, Buffer.from(AAD_LABEL + kvKey, 'utf8')]);
  }
}
