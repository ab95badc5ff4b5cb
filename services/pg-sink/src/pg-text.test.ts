import { describe, expect, it } from 'vitest';
import { pgJson, pgText } from './pg-text.js';

describe('what PostgreSQL can store', () => {
  it('replaces NUL and unpaired surrogates in text, and keeps everything else', () => {
    expect(pgText('a\u0000b')).toBe('a\uFFFDb');
    expect(pgText('x\uD800y')).toBe('x\uFFFDy');
    expect(pgText('ok 😀 \\u0000')).toBe('ok 😀 \\u0000');
    expect(pgText(undefined)).toBeNull();
  });

  it('replaces their escapes in JSON, but not an escaped backslash followed by "u0000"', () => {
    expect(JSON.parse(pgJson({ a: 'x\u0000\u0000y', b: '\uDC00', c: '😀', d: '\\u0000' }))).toEqual({
      a: 'x\uFFFD\uFFFDy',
      b: '\uFFFD',
      c: '😀',
      d: '\\u0000',
    });
  });
});
