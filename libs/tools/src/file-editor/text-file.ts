import type { FileHandle } from 'node:fs/promises';
import { open } from 'node:fs/promises';
import { formatCount, OUTPUT_BOUNDS } from '../core/output-bounds.js';

/** Largest file the editor loads. */
export const MAX_EDITABLE_BYTES = OUTPUT_BOUNDS.editableBytes;

export type TextFileRead =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string };

/** How a file is opened for reading (e.g. Workspace.openFile, which follows no swapped symlink). */
export type OpenForReading = (filePath: string) => Promise<FileHandle>;

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Whether bytes look like text: no NUL in the first 8 KiB and valid UTF-8. */
export function decodeText(bytes: Uint8Array): string | undefined {
  if (bytes.subarray(0, 8192).includes(0)) return undefined;
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

export function tooLargeMessage(filePath: string, bytes: number): string {
  return `The file ${filePath} is ${formatCount(bytes)} bytes, too large for the editor (at most ${formatCount(MAX_EDITABLE_BYTES)}). View parts of it with file_editor view and a view_range, or use the terminal (e.g. \`sed -n '1,100p'\`, \`grep -n\`).`;
}

/**
 * At most `limit` bytes of an open file from its start (one more when it has more, so the caller
 * can tell): never all of a huge file, even one that grows while it is read. `expected` (its
 * size when it was looked at) sizes the first read.
 */
export async function readAtMost(handle: FileHandle, limit: number, expected: number): Promise<Buffer> {
  const pieces: Buffer[] = [];
  let total = 0;
  let want = Math.min(limit, expected) + 1;
  while (total <= limit) {
    const piece = Buffer.allocUnsafe(Math.min(want, limit + 1 - total));
    const { bytesRead } = await handle.read(piece, 0, piece.length, total);
    if (bytesRead === 0) break;
    pieces.push(piece.subarray(0, bytesRead));
    total += bytesRead;
    want = 1024 * 1024;
  }
  return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, total);
}

/**
 * Read a UTF-8 text file (opened with `openFile`, e.g. Workspace.openFile), or explain why it
 * cannot be edited as text. Its size is checked before it is read, and no more than the limit
 * is read even when it grows meanwhile.
 */
export async function readTextFile(
  filePath: string,
  openFile: OpenForReading = (file) => open(file, 'r'),
): Promise<TextFileRead> {
  const handle = await openFile(filePath);
  try {
    const { size } = await handle.stat();
    if (size > MAX_EDITABLE_BYTES) return { ok: false, message: tooLargeMessage(filePath, size) };
    const bytes = await readAtMost(handle, MAX_EDITABLE_BYTES, size);
    if (bytes.length > MAX_EDITABLE_BYTES)
      return { ok: false, message: tooLargeMessage(filePath, (await handle.stat()).size) };
    return decoded(filePath, bytes);
  } finally {
    await handle.close();
  }
}

export function decoded(filePath: string, bytes: Uint8Array): TextFileRead {
  const text = decodeText(bytes);
  if (text === undefined) return { ok: false, message: notTextMessage(filePath, bytes.length) };
  return { ok: true, text };
}

export function notTextMessage(filePath: string, bytes: number): string {
  return `The file ${filePath} is not UTF-8 text (it looks binary or uses another encoding; ${formatCount(bytes)} bytes). The editor only handles UTF-8 text; inspect it with the terminal (\`file\`, \`xxd | head\`, \`iconv\`).`;
}

/** Lines of a text file (a trailing newline does not start an extra line). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** `cat -n` style: right-aligned line numbers, a tab, then the line. */
export function numberLines(lines: readonly string[], firstLineNumber: number): string {
  return lines.map((line, index) => `${String(index + firstLineNumber).padStart(6)}\t${line}`).join('\n');
}

/** 1-based line numbers at which each occurrence of `needle` starts. */
export function occurrenceLines(text: string, needle: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let scanned = 0;
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + 1)) {
    for (let i = text.indexOf('\n', scanned); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) {
      line += 1;
      scanned = i + 1;
    }
    lines.push(line);
  }
  return lines;
}
