import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretsError } from './errors.js';
import { SecretCipher } from './secret-cipher.js';

const cipher = new SecretCipher(randomBytes(32));
const KEY = 'acme.conversation.c1.GITHUB_TOKEN';
const VALUE = 'ghp_0123456789abcdefghijklmnopqrstuvwxyz';

function corruption(run: () => unknown): SecretsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    expect((error as SecretsError).code).toBe('corrupt');
    expect((error as SecretsError).isRetryable).toBe(false);
    return error as SecretsError;
  }
  throw new Error('decrypted');
}

describe('SecretCipher', () => {
  it('round-trips values, unicode and multi-line ones included', () => {
    for (const value of [
      VALUE,
      'päss wörd 🔑 密码',
      '-----BEGIN KEY-----\nAAAA\nBBBB\n-----END KEY-----\n',
      'x'.repeat(65_536),
    ]) {
      expect(cipher.decrypt(KEY, cipher.encrypt(KEY, value))).toBe(value);
    }
  });

  it('uses a fresh nonce each time, and the value does not appear in what is stored', () => {
    const one = Buffer.from(cipher.encrypt(KEY, VALUE));
    const two = Buffer.from(cipher.encrypt(KEY, VALUE));
    expect(one.equals(two)).toBe(false);
    expect(one.subarray(9, 21).equals(two.subarray(9, 21))).toBe(false);
    expect(one.length).toBe(1 + 8 + 12 + Buffer.byteLength(VALUE) + 16);
    for (const stored of [one, two]) {
      expect(stored.includes(Buffer.from(VALUE))).toBe(false);
      expect(stored.toString('latin1')).not.toContain('ghp_');
    }
  });

  it('refuses a ciphertext moved under another KV key (tenant, conversation or name)', () => {
    const stored = cipher.encrypt(KEY, VALUE);
    for (const other of [
      'globex.conversation.c1.GITHUB_TOKEN',
      'acme.conversation.c2.GITHUB_TOKEN',
      'acme.conversation.c1.NPM_TOKEN',
      'acme.defaults.GITHUB_TOKEN',
    ]) {
      const error = corruption(() => cipher.decrypt(other, stored));
      expect(error.message).toContain(other);
      expect(error.message).toMatch(/does not authenticate/);
      expect(error.message).not.toContain(VALUE);
    }
  });

  it('refuses any changed byte, and a truncated value', () => {
    const stored = Buffer.from(cipher.encrypt(KEY, VALUE));
    for (const index of [9, 15, 21, 30, stored.length - 1]) {
      const tampered = Buffer.from(stored);
      tampered[index]! ^= 0x01;
      corruption(() => cipher.decrypt(KEY, tampered));
    }
    expect(corruption(() => cipher.decrypt(KEY, stored.subarray(0, 20))).message).toMatch(/too short/);
    const future = Buffer.from(stored);
    future[0] = 2;
    expect(corruption(() => cipher.decrypt(KEY, future)).message).toMatch(/format version 2/);
  });

  it('tells a value of another key apart from a tampered one', () => {
    const other = new SecretCipher(randomBytes(32));
    const error = corruption(() => cipher.decrypt(KEY, other.encrypt(KEY, VALUE)));
    expect(error.message).toContain(`key id ${other.keyId}`);
    expect(error.message).toContain(`this key's id is ${cipher.keyId}`);
    // a forged header (our key id on another key's ciphertext) still fails to authenticate
    const forged = Buffer.from(other.encrypt(KEY, VALUE));
    Buffer.from(cipher.encrypt(KEY, VALUE)).copy(forged, 0, 0, 9);
    expect(corruption(() => cipher.decrypt(KEY, forged)).message).toMatch(/does not authenticate/);
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretCipher(randomBytes(16))).toThrow(expect.objectContaining({ code: 'invalid_key' }));
  });
});
