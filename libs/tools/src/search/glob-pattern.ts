const REGEX_SPECIAL = new Set(['.', '+', '^', '$', '(', ')', '|', '\\', '/']);

/**
 * Compile a glob (`*`, `**`, `?`, `{a,b}`, `[abc]`, `[!abc]`) to a RegExp
 * matched against a `/`-separated relative path. A pattern without `/`
 * matches the base name at any depth, as in ripgrep's `--glob`.
 */
export function globToRegExp(glob: string): RegExp {
  const pattern = glob.startsWith('./') ? glob.slice(2) : glob;
  let source = '';
  let braceDepth = 0;
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index] ?? '';
    if (char === '*') {
      if (pattern[index + 1] === '*') {
        const followedBySlash = pattern[index + 2] === '/';
        source += followedBySlash ? '(?:.*/)?' : '.*';
        index += followedBySlash ? 2 : 1;
      } else {
        source += '[^/]*';
      }
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '[') {
      const close = pattern.indexOf(']', index + 2);
      if (close === -1) {
        source += '\\[';
      } else {
        let body = pattern.slice(index + 1, close).replace(/\\/g, '\\\\');
        if (body.startsWith('!')) body = `^${body.slice(1)}`;
        source += `[${body}]`;
        index = close;
      }
    } else if (char === '{') {
      braceDepth += 1;
      source += '(?:';
    } else if (char === '}' && braceDepth > 0) {
      braceDepth -= 1;
      source += ')';
    } else if (char === ',' && braceDepth > 0) {
      source += '|';
    } else if (REGEX_SPECIAL.has(char) || char === '{' || char === '}' || char === ']') {
      source += char === '/' ? '/' : `\\${char}`;
    } else {
      source += char;
    }
  }
  source += ')'.repeat(braceDepth);
  const anchored = pattern.includes('/') ? `^${source}$` : `^(?:.*/)?${source}$`;
  return new RegExp(anchored);
}
