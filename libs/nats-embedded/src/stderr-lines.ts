import type { Readable } from 'node:stream';

/** Calls `onLine` with each line a child prints on `stream` (without its newline), the last one even if unterminated. */
export function forEachLine(stream: Readable, onLine: (line: string) => void): void {
  let pending = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  });
  stream.once('end', () => {
    if (pending !== '') onLine(pending);
    pending = '';
  });
}
