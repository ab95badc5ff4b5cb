import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SecretsError } from './errors.js';
import { generateSecretsKey, loadSecretsKey } from './secrets-key.js';

const directory = mkdtempSync(join(tmpdir(), 'flotilla-secrets-key-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function failure(environment: NodeJS.ProcessEnv): SecretsError {
  try {
    loadSecretsKey(environment);
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    return error as SecretsError;
  }
  throw new Error('expected a SecretsError');
}

describe('generateSecretsKey', () => {
  it('is base64 of 32 random bytes', () => {
    const key = generateSecretsKey();
    expect(key).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    expect(generateSecretsKey()).not.toBe(key);
  });
});

describe('loadSecretsKey', () => {
  it('is undefined when neither variable is set (or both are empty)', () => {
    expect(loadSecretsKey({})).toBeUndefined();
    expect(loadSecretsKey({ FLOTILLA_SECRETS_KEY: '', FLOTILLA_SECRETS_KEY_FILE: '' })).toBeUndefined();
  });

  it('reads FLOTILLA_SECRETS_KEY', () => {
    const key = generateSecretsKey();
    expect(loadSecretsKey({ FLOTILLA_SECRETS_KEY: key })).toEqual(Buffer.from(key, 'base64'));
  });

  it('reads the file FLOTILLA_SECRETS_KEY_FILE names, ignoring surrounding whitespace', () => {
    const key = generateSecretsKey();
    const file = join(directory, 'secrets.key');
    writeFileSync(file, `${key}\n`, { mode: 0o600 });
    expect(loadSecretsKey({ FLOTILLA_SECRETS_KEY_FILE: file })).toEqual(Buffer.from(key, 'base64'));
  });

  it('names the variable, and never quotes the key, when the key is malformed', () => {
    const short = Buffer.alloc(16, 7).toString('base64');
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [{ FLOTILLA_SECRETS_KEY: short }, /FLOTILLA_SECRETS_KEY must hold a key as standard base64 of 32 bytes/],
      [
        { FLOTILLA_SECRETS_KEY: 'not base64 at all, and long enough to look like something!' },
        /FLOTILLA_SECRETS_KEY must hold/,
      ],
      [{ FLOTILLA_SECRETS_KEY: generateSecretsKey().replace('=', '') }, /FLOTILLA_SECRETS_KEY must hold/],
      [
        {
          FLOTILLA_SECRETS_KEY: generateSecretsKey()
            .replaceAll('+', '-')
            .replaceAll('/', '_')
            .replace(/[A-Za-z0-9]/, '-'),
        },
        /FLOTILLA_SECRETS_KEY must hold/,
      ],
    ];
    for (const [environment, message] of cases) {
      const error = failure(environment);
      expect(error.code).toBe('invalid_key');
      expect(error.message).toMatch(message);
      expect(error.message).not.toContain(environment['FLOTILLA_SECRETS_KEY']);
    }
    const file = join(directory, 'bad.key');
    writeFileSync(file, short);
    const error = failure({ FLOTILLA_SECRETS_KEY_FILE: file });
    expect(error).toMatchObject({
      code: 'invalid_key',
      message: expect.stringContaining(`FLOTILLA_SECRETS_KEY_FILE (${file})`),
    });
    expect(error.message).not.toContain(short);
  });

  it('says which file cannot be read, and how to create one', () => {
    const missing = join(directory, 'missing.key');
    const error = failure({ FLOTILLA_SECRETS_KEY_FILE: missing });
    expect(error.code).toBe('not_configured');
    expect(error.message).toContain(`FLOTILLA_SECRETS_KEY_FILE names ${missing}, which cannot be read (ENOENT)`);
    expect(error.message).toContain('openssl rand -base64 32');
  });

  it('refuses both variables at once', () => {
    const key = generateSecretsKey();
    expect(failure({ FLOTILLA_SECRETS_KEY: key, FLOTILLA_SECRETS_KEY_FILE: '/somewhere' }).message).toMatch(
      /both FLOTILLA_SECRETS_KEY and FLOTILLA_SECRETS_KEY_FILE/,
    );
  });
});
