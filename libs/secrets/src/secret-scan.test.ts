import { describe, expect, it } from 'vitest';
import { SecretScanner } from './secret-scan.js';

const SECRETS = { API_TOKEN: 'tok-1234567890', DEPLOY_KEY: 'line-one-of-key\nline-two-of-key' };

function scan(parts: readonly (string | Uint8Array)[], secrets: Record<string, string> = SECRETS): string[] {
  const scanner = new SecretScanner(secrets);
  for (const part of parts) scanner.push(typeof part === 'string' ? Buffer.from(part) : part);
  return scanner.found;
}

describe('SecretScanner', () => {
  it('finds a value, and its base64, in bytes among binary ones', () => {
    expect(
      scan([Buffer.concat([Buffer.from([0, 255, 7]), Buffer.from('x tok-1234567890 y'), Buffer.from([0])])]),
    ).toEqual(['API_TOKEN']);
    expect(scan([Buffer.from('tok-1234567890').toString('base64').replace(/=+$/, '')])).toEqual(['API_TOKEN']);
    expect(scan(['header\nline-two-of-key\n'])).toEqual(['DEPLOY_KEY']);
  });

  it('finds a value split across parts, however the parts fall', () => {
    const text = `${'a'.repeat(100)}tok-1234567890${'b'.repeat(100)}`;
    for (let cut = 95; cut <= 120; cut += 1) {
      expect(scan([text.slice(0, cut), text.slice(cut)]), `cut at ${cut}`).toEqual(['API_TOKEN']);
    }
    expect(scan([...'tok-1234567890'].map((character) => character))).toEqual(['API_TOKEN']);
  });

  it('finds nothing where there is nothing, and is inactive without secrets', () => {
    expect(scan(['tok-123456789', '0 is not it'.slice(1)])).toEqual([]);
    const scanner = new SecretScanner({});
    scanner.push(Buffer.from('tok-1234567890'));
    expect(scanner.active).toBe(false);
    expect(scanner.found).toEqual([]);
  });
});
