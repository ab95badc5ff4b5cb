import { SecretName } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { SecretsError } from './errors.js';
import {
  assertSecretName,
  assertSecretValue,
  MAX_SECRET_VALUE_CHARS,
  SECRET_NAME_PATTERN,
  secretNameProblem,
} from './secret-rules.js';

function errorOf(run: () => void): SecretsError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SecretsError);
    return error as SecretsError;
  }
  throw new Error('expected a SecretsError');
}

describe('secret names', () => {
  it('are environment-variable names', () => {
    for (const name of ['GITHUB_TOKEN', 'A', '_PRIVATE', 'X1', 'AWS_SECRET_ACCESS_KEY', `A${'B'.repeat(127)}`]) {
      expect(secretNameProblem(name), name).toBeUndefined();
      expect(SecretName.safeParse(name).success, `the event schema accepts ${name}`).toBe(true);
    }
    for (const name of ['', 'github_token', '1ABC', 'A-B', 'A.B', 'A B', 'Ä', `A${'B'.repeat(128)}`, 'A\nB']) {
      expect(SECRET_NAME_PATTERN.test(name), JSON.stringify(name)).toBe(false);
      expect(errorOf(() => assertSecretName(name))).toMatchObject({ code: 'invalid_name', isRetryable: false });
    }
  });

  it('may not replace what the sandbox sets, nor use reserved prefixes', () => {
    for (const name of [
      'PATH',
      'HOME',
      'LANG',
      'TERM',
      'PWD',
      'SHELL',
      'USER',
      'LD_PRELOAD',
      'LD_LIBRARY_PATH',
      'LD_AUDIT',
      'BASH_ENV',
      'IFS',
      '_',
    ]) {
      expect(errorOf(() => assertSecretName(name)).message, name).toMatch(/cannot be a secret|reserved/);
    }
    expect(errorOf(() => assertSecretName('FLOTILLA_SECRETS_KEY')).message).toContain('FLOTILLA_');
    expect(errorOf(() => assertSecretName('BASH_FUNC_ls%%')).code).toBe('invalid_name');
    expect(secretNameProblem('PATHS')).toBeUndefined();
    expect(secretNameProblem('MY_HOME')).toBeUndefined();
  });

  it('never quote a name that is not one (it may be a value pasted in its place)', () => {
    const pasted = 'ghp_s3cr3tValue0123456789';
    expect(errorOf(() => assertSecretName(pasted)).message).not.toContain(pasted);
  });
});

describe('secret values', () => {
  it('are 4 to 64 Ki characters, with no NUL and no lone surrogate', () => {
    for (const value of ['abcd', 'x'.repeat(MAX_SECRET_VALUE_CHARS), 'line 1\nline 2', 'päss wörd 🔑', '  spaces  '])
      expect(() => assertSecretValue(value)).not.toThrow();
    const cases: [string, RegExp][] = [
      ['', /at least 4/],
      ['abc', /at least 4 characters \(shorter ones would mask ordinary text/],
      ['x'.repeat(MAX_SECRET_VALUE_CHARS + 1), /at most 65536/],
      ['abc\u0000def', /NUL/],
      ['abcd\uD800', /well-formed Unicode/],
      ['\uDC00abcd', /well-formed Unicode/],
    ];
    for (const [value, message] of cases) {
      const error = errorOf(() => assertSecretValue(value));
      expect(error.code).toBe('invalid_value');
      expect(error.message).toMatch(message);
      if (value.length > 0) expect(error.message).not.toContain(value);
    }
  });
});
