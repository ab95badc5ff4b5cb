import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SecretsError, SecretsErrorCode } from './errors.js';

export const SECRETS_KEY_BYTES = 32;
const KEY_VARIABLE = 'FLOTILLA_SECRETS_KEY';
const KEY_FILE_VARIABLE = 'FLOTILLA_SECRETS_KEY_FILE';
/** Standard base64 of 32 bytes: 43 characters and one `=`. */
const BASE64_KEY = /^[A-Za-z0-9+/]{43}=$/;

/** A fresh AES-256 key, as the base64 that FLOTILLA_SECRETS_KEY (or its file) holds. */
export function generateSecretsKey(): string {
  return randomBytes(SECRETS_KEY_BYTES).toString('base64');
}

/**
 * The key that encrypts the secrets bucket: FLOTILLA_SECRETS_KEY (base64 of 32 bytes), or the file
 * FLOTILLA_SECRETS_KEY_FILE names (holding that base64; surrounding whitespace is ignored).
 * Undefined when neither is set (secrets are then unavailable). Throws a SecretsError naming the
 * variable when both are set, the file cannot be read or the key is malformed: a wrong key must
 * stop a service at start-up, not make every secret look corrupt later.
 */
export function loadSecretsKey(environment: NodeJS.ProcessEnv = process.env): Buffer | undefined {
  const inline = environment[KEY_VARIABLE] || undefined;
  const file = environment[KEY_FILE_VARIABLE] || undefined;
  if (inline !== undefined && file !== undefined) {
    throw new SecretsError(
      SecretsErrorCode.InvalidKey,
      `both ${KEY_VARIABLE} and ${KEY_FILE_VARIABLE} are set: set only one of them`,
    );
  }
  if (inline !== undefined) return decodeKey(inline, KEY_VARIABLE);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SecretsError(
      SecretsErrorCode.NotConfigured,
      `${KEY_FILE_VARIABLE} names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): ` +
        'create it holding a key (base64 of 32 random bytes, e.g. `openssl rand -base64 32`) or unset the variable',
      { cause: error },
    );
  }
  return decodeKey(text, `${KEY_FILE_VARIABLE} (${file})`);
}

function decodeKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  // never quote the text: it is, or is close to, the key
  if (!BASE64_KEY.test(trimmed)) {
    throw new SecretsError(
      SecretsErrorCode.InvalidKey,
      `${where} must hold a key as standard base64 of ${SECRETS_KEY_BYTES} bytes (44 characters ending in "="; e.g. \`openssl rand -base64 32\`), ` +
        `but what it holds (${trimmed.length} characters) is not`,
    );
  }
  return Buffer.from(trimmed, 'base64');
}

/** A short public fingerprint of a key, stored with each value: tells "another key" from "tampered". */
export function keyIdOf(key: Buffer): Buffer {
  return createHash('sha256').update('flotilla secrets key id\u0000').update(key).digest().subarray(0, 8);
}

export function assertKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== SECRETS_KEY_BYTES) {
    throw new SecretsError(
      SecretsErrorCode.InvalidKey,
      `the secrets key must be ${SECRETS_KEY_BYTES} bytes (AES-256), not ${Buffer.isBuffer(key) ? key.length : typeof key}`,
    );
  }
}
