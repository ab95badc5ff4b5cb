/** The parts of process.stdin a value is read from (a Readable in tests). */
export type InputStream = NodeJS.ReadableStream & { readonly isTTY?: boolean; setRawMode?(mode: boolean): unknown };

/**
 * All of stdin, for `secret set`. On a terminal: `prompt` on stderr, then one line typed (or
 * pasted) without echo — the value never shows on the screen. Multi-line values: pipe them in, or
 * use --value-file.
 */
export async function readStdinValue(
  prompt: string,
  stdin: InputStream,
  stderr: { write(text: string): unknown },
): Promise<string> {
  if (!stdin.isTTY || !stdin.setRawMode) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }
  const setRawMode = stdin.setRawMode.bind(stdin);
  stderr.write(prompt);
  setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise<string>((resolve, reject) => {
    let value = '';
    const finish = (): void => {
      stdin.off('data', onData);
      setRawMode(false);
      stdin.pause();
      stderr.write('\n');
    };
    const onData = (text: string | Buffer): void => {
      for (const char of String(text)) {
        if (char === '\r' || char === '\n' || char === '\u0004') {
          finish();
          resolve(value);
          return;
        }
        if (char === '\u0003') {
          finish();
          reject(new Error('interrupted: no secret was set'));
          return;
        }
        if (char === '\u007f' || char === '\b') value = Array.from(value).slice(0, -1).join('');
        else value += char;
      }
    };
    stdin.on('data', onData);
  });
}

/**
 * All of stdin as text, for `send ID -`: until end of input (Ctrl-D on a terminal, where the text
 * is echoed as typed and `hint` is shown on stderr first). One final line break is dropped.
 */
export async function readStdinText(
  stdin: InputStream,
  stderr: { write(text: string): unknown },
  hint: string,
): Promise<string> {
  if (stdin.isTTY) stderr.write(hint);
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}
