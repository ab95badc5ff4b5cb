const ANSI_ESCAPE = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

/** Apply carriage returns the way a terminal would: keep what was written last on each line. */
function collapseCarriageReturns(line: string): string {
  if (!line.includes('\r')) return line;
  const trimmed = line.endsWith('\r') ? line.replace(/\r+$/, '') : line;
  const segments = trimmed.split('\r');
  return segments[segments.length - 1] ?? '';
}

/**
 * Make raw terminal output readable for a model: drop ANSI escape sequences,
 * resolve `\r` progress updates, and replace binary garbage by a notice.
 */
export function readableTerminalText(raw: string): string {
  const text = raw.replace(ANSI_ESCAPE, '').split('\n').map(collapseCarriageReturns).join('\n');
  let suspicious = 0;
  for (const char of text) {
    if (char === '\uFFFD') suspicious += 1;
  }
  const controls = text.match(CONTROL)?.length ?? 0;
  suspicious += controls;
  if (suspicious > 0 && suspicious > text.length * 0.05) {
    return `[The command printed ${raw.length} characters of binary (non-UTF-8) data, which is not shown. Redirect binary output to a file, or inspect it with \`xxd FILE | head\`, \`file FILE\` or \`base64\`.]\n`;
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
