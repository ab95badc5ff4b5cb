import { readFile } from 'node:fs/promises';

/** Largest file the editor loads. */
export const MAX_EDITABLE_BYTES = 10 * 1024 * 1024;

export type TextFileRead = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string };

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

/** Read a UTF-8 text file (with `read`, e.g. Workspace.readFile), or explain why it cannot be edited as text. */
export async function readTextFile(filePath: string, read: (filePath: string) => Promise<Buffer> = readFile): Promise<TextFileRead> {
  const bytes = await read(filePath);
  if (bytes.length > MAX_EDITABLE_BYTES) {
    return { ok: false, message: `The file ${filePath} is ${bytes.length} bytes, too large for the editor. Use the terminal (e.g. \`sed -n '1,100p'\`, \`grep -n\`).` };
  }
  const text = decodeText(bytes);
  if (text === undefined) {
    return {
      ok: false,
      message: `The file ${filePath} is not UTF-8 text (it looks binary or uses another encoding; ${bytes.length} bytes). The editor only handles UTF-8 text; inspect it with the terminal (\`file\`, \`xxd | head\`, \`iconv\`).`,
    };
  }
  return { ok: true, text };
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
