import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskSecrets } from './mask-secrets.js';

describe('maskSecrets', () => {
  it('replaces every occurrence of each value by its name', () => {
    const secrets = { GITHUB_TOKEN: 'ghp_abc123XYZ', NPM_TOKEN: 'npm_999zzz' };
    expect(maskSecrets('token ghp_abc123XYZ, again ghp_abc123XYZ; npm npm_999zzz.', secrets)).toBe(
      'token <secret:GITHUB_TOKEN>, again <secret:GITHUB_TOKEN>; npm <secret:NPM_TOKEN>.',
    );
    expect(maskSecrets('nothing here', secrets)).toBe('nothing here');
    expect(maskSecrets('', secrets)).toBe('');
    expect(maskSecrets('ghp_abc123XYZ', {})).toBe('ghp_abc123XYZ');
  });

  it('masks back-to-back occurrences separately and leaves the text between alone', () => {
    expect(maskSecrets('s3cretS3cret|s3cretS3cret', { A: 's3cretS3cret' })).toBe('<secret:A>|<secret:A>');
    expect(maskSecrets('s3cretS3crets3cretS3cret', { A: 's3cretS3cret' })).toBe('<secret:A><secret:A>');
  });

  it('masks a value inside another as the longer one, and alone elsewhere', () => {
    const secrets = { INNER: 'secret', OUTER: 'my-secret-value' };
    expect(maskSecrets('a my-secret-value b secret c', secrets)).toBe('a <secret:OUTER> b <secret:INNER> c');
  });

  it('masks overlapping values together, leaving no fragment of either', () => {
    const secrets = { LEFT: 'abcdef', RIGHT: 'defghi' };
    const masked = maskSecrets('x abcdefghi y', secrets);
    expect(masked).toBe('x <secret:LEFT><secret:RIGHT> y');
    for (const fragment of ['abc', 'ghi', 'def']) expect(masked).not.toContain(fragment);
    // a value whose occurrences overlap themselves
    expect(maskSecrets('aaaaaa', { A: 'aaaa' })).toBe('<secret:A>');
  });

  it('masks the base64 and base64url forms of a value', () => {
    const value = 'tok?en>>~~1';
    const secrets = { TOKEN: value };
    const base64 = Buffer.from(value).toString('base64');
    const base64url = Buffer.from(value).toString('base64url');
    expect(base64).not.toBe(base64url);
    expect(maskSecrets(`Authorization: Basic ${base64}`, secrets)).toBe(
      `Authorization: Basic <secret:TOKEN>${base64.endsWith('=') ? base64.slice(base64.replace(/=+$/, '').length) : ''}`,
    );
    expect(maskSecrets(`url ${base64url} end`, secrets)).toBe('url <secret:TOKEN> end');
    expect(maskSecrets(`echo -n | base64: ${Buffer.from('abcd').toString('base64')}`, { SHORT: 'abcd' })).toBe(
      'echo -n | base64: <secret:SHORT>==',
    );
  });

  it('masks multi-line values whole, in CRLF form, as JSON and line by line', () => {
    const pem =
      '-----BEGIN TEST KEY-----\nMIIBVwIBADANBgkqhkiG9w0BAQEFAASCAUEwggE9\nAgEAAkEAq7BFUpkGp3+XQmZ8rJ5KQZq0mNc\n-----END TEST KEY-----';
    const secrets = { KEY: pem };
    expect(maskSecrets(`cat key.pem\n${pem}\n$ `, secrets)).toBe('cat key.pem\n<secret:KEY>\n$ ');
    expect(maskSecrets(`pty: ${pem.replaceAll('\n', '\r\n')}\r\n`, secrets)).toBe('pty: <secret:KEY>\r\n');
    expect(maskSecrets(JSON.stringify({ key: pem }), secrets)).toBe('{"key":"<secret:KEY>"}');
    const head = pem.split('\n').slice(0, 2).join('\n');
    const masked = maskSecrets(`$ head -2 key.pem\n${head}\n`, secrets);
    expect(masked).not.toContain('MIIBVwIBADANBgkqhkiG9w0BAQEFAASCAUEwggE9');
    expect(masked).toBe('$ head -2 key.pem\n<secret:KEY>\n<secret:KEY>\n');
  });

  it('masks unicode values, and their base64 (of the UTF-8)', () => {
    const secrets = { PASSWORD: 'päss wörd 🔑 密码' };
    expect(maskSecrets('the password is päss wörd 🔑 密码!', secrets)).toBe('the password is <secret:PASSWORD>!');
    expect(maskSecrets(Buffer.from('päss wörd 🔑 密码').toString('base64'), secrets)).toMatch(/^<secret:PASSWORD>=*$/);
    expect(maskSecrets('🔑 alone stays', secrets)).toBe('🔑 alone stays');
  });

  it('shows a value two names share under the first name, and ignores values too short to be secrets', () => {
    expect(maskSecrets('v=shared-value', { B_TOKEN: 'shared-value', A_TOKEN: 'shared-value' })).toBe(
      'v=<secret:A_TOKEN>',
    );
    expect(maskSecrets('a b c abc', { SHORT: 'abc', EMPTY: '' })).toBe('a b c abc');
  });

  it('takes text with regular-expression characters literally', () => {
    expect(maskSecrets('p: a.*b+(c)|[d]$ and aXXb', { PATTERN: 'a.*b+(c)|[d]$' })).toBe('p: <secret:PATTERN> and aXXb');
  });

  it('masks what one shell command makes of a value: base64 at any offset, hex, reversed, case-changed, URL- and JSON-escaped', () => {
    const value = 'ghp_Sup3rS3cret_4817_zebra';
    const secrets = { TOKEN: value };
    const shell = (command: string): string =>
      execFileSync('bash', ['-c', command], { env: { S: value, PATH: process.env['PATH'] ?? '' } }).toString('utf8');
    const commands = [
      'echo "$S" | rev',
      'printf %s "$S" | xxd -p',
      'printf %s "$S" | od -An -tx1 | tr -d " \n"; echo',
      'echo "${S^^}"',
      'echo "${S,,}"',
      'echo "$S" | base64',
      'printf %s "x$S" | base64',
      'printf %s "xy$S" | base64',
      'printf %s "xyz$S" | base64 -w0 | tr "+/" "-_"',
      'printf %s "ab$S-tail" | basenc --base64url',
      'printf %s "$S" | jq -sRr @uri 2>/dev/null || node -e "process.stdout.write(encodeURIComponent(process.env.S))"',
    ];
    for (const command of commands) {
      const output = shell(command);
      const masked = maskSecrets(output, secrets);
      expect(masked, `${command} → ${output}`).toContain('<secret:TOKEN>');
      // no run of 8 characters of the encoded value is left beside the mask
      expect(
        masked.replace(/<secret:TOKEN>/g, '').replace(/[^A-Za-z0-9+/_-]/g, '').length,
        `${command} → ${masked}`,
      ).toBeLessThan(12);
    }
  });

  it('leaves text that merely shares a few characters with an encoding alone', () => {
    expect(maskSecrets('a commit 5f3e, a word STAR, plain output', { TOKEN: 'ghp_Sup3rS3cret_4817_zebra' })).toBe(
      'a commit 5f3e, a word STAR, plain output',
    );
  });

  it('masks a long text in one pass exactly as a search per needle does, overlaps, neighbours and regular-expression characters included', () => {
    // values built of few letters (so they overlap and nest), some with characters a pattern would read
    const value = fc.oneof(fc.stringMatching(/^[ab]{4,8}$/), fc.stringMatching(/^[ab.*()|?+$^\\-]{4,9}$/));
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('A', 'B', 'C'), value, { minKeys: 1 }),
        fc.array(fc.oneof(value, fc.stringMatching(/^[ab]{0,6}$/), fc.stringMatching(/^[abc. ]{0,6}$/)), {
          maxLength: 40,
        }),
        (secrets, parts) => {
          // past the length from which the whole text is searched at once
          const text = `${'-'.repeat(40_000)}${parts.join('')}`;
          expect(maskSecrets(text, secrets)).toBe(maskSecrets(text, secrets, 'encodings', 'per-needle'));
        },
      ),
      { numRuns: 300 },
    );
  });
});
