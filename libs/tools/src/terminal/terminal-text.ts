const ANSI_ESCAPE = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

/** Apply carriage returns the way a terminal would: keep what was written last on each line. */
function collapseCarriageReturns(line: string): string {
  const trimmed = line.endsWith('\r') ? line.replace(/\r+$/, '') : line;
  return trimmed.slice(trimmed.lastIndexOf('\r') + 1);
}

/** collapseCarriageReturns on every line holding a `\r`; lines without one are not touched (nor split out of a 10 MB output). */
function collapseAllCarriageReturns(text: string): string {
  let cr = text.indexOf('\r');
  if (cr === -1) return text;
  const pieces: string[] = [];
  let cursor = 0;
  while (cr !== -1) {
    const lineStart = Math.max(cursor, text.lastIndexOf('\n', cr) + 1);
    const newline = text.indexOf('\n', cr);
    const lineEnd = newline === -1 ? text.length : newline;
    pieces.push(text.slice(cursor, lineStart), collapseCarriageReturns(text.slice(lineStart, lineEnd)));
    cursor = lineEnd;
    cr = text.indexOf('\r', lineEnd);
  }
  pieces.push(text.slice(cursor));
  return pieces.join('');
}

/** Replacement characters and control characters (other than tab, newline, CR) in `text`. */
function countSuspicious(text: string): { suspicious: number; controls: number } {
  let suspicious = 0;
  let controls = 0;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 0xfffd) suspicious += 1;
    else if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) || code === 0x7f) controls += 1;
  }
  return { suspicious: suspicious + controls, controls };
}

/**
 * Make raw terminal output readable for a model: drop ANSI escape sequences,
 * resolve `\r` progress updates, and replace binary garbage by a notice.
 * Linear in the output's length, with no array of its lines or characters. `printed`: what the
 * command printed in all, when `raw` is what was kept of it.
 */
export function readableTerminalText(raw: string, printed = raw.length): string {
  const text = collapseAllCarriageReturns(raw.includes('\x1b') ? raw.replace(ANSI_ESCAPE, '') : raw);
  const { suspicious, controls } = countSuspicious(text);
  if (suspicious > 0 && suspicious > text.length * 0.05) {
    return `[The command printed ${printed.toLocaleString('en-US')} characters of binary (non-UTF-8) data, which is not shown. Redirect binary output to a file, or inspect it with \`xxd FILE | head\`, \`file FILE\` or \`base64\`.]\n`;
  }
  return controls > 0 ? text.replace(CONTROL, '?') : text;
}

/** Quote text as a bash ANSI-C string ($'...') so it can be passed to `eval` verbatim. */
export function bashAnsiCQuote(text: string): string {
  let out = "$'";
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '\\') out += '\\\\';
    else if (char === "'") out += "\\'";
    else if (char === '\n') out += '\\n';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += char;
  }
  return `${out}'`;
}
