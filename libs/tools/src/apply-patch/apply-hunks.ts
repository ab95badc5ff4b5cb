import type { Hunk } from './patch-model.js';

type Normalizer = (line: string) => string;
const NORMALIZERS: readonly Normalizer[] = [(line) => line, (line) => line.trimEnd(), (line) => line.trim()];

function findSequence(haystack: readonly string[], needle: readonly string[], from: number, fromEnd: boolean): number {
  for (const normalize of NORMALIZERS) {
    const wanted = needle.map(normalize);
    const last = haystack.length - needle.length;
    const starts = fromEnd
      ? [last]
      : Array.from({ length: Math.max(0, last - from + 1) }, (_, offset) => from + offset);
    for (const start of starts) {
      if (start < from) continue;
      if (wanted.every((line, offset) => normalize(haystack[start + offset] ?? '') === line)) return start;
    }
  }
  return -1;
}

function preview(lines: readonly string[]): string {
  const shown = lines.slice(0, 5).map((line) => `  ${line}`);
  return lines.length > 5 ? `${shown.join('\n')}\n  …` : shown.join('\n');
}

/** Apply hunks in order to a file's text; the error names the hunk that did not match. */
export function applyHunks(
  original: string,
  hunks: readonly Hunk[],
  filePath: string,
): { ok: true; text: string } | { ok: false; message: string } {
  const trailingNewline = original.endsWith('\n');
  const lines = original === '' ? [] : original.split('\n');
  if (trailingNewline) lines.pop();
  let cursor = 0;
  for (const [number, hunk] of hunks.entries()) {
    if (hunk.anchor !== undefined) {
      const anchorAt = findSequence(lines, [hunk.anchor], cursor, false);
      if (anchorAt === -1)
        return {
          ok: false,
          message: `Hunk ${number + 1} of ${filePath}: the context line after @@ was not found: ${JSON.stringify(hunk.anchor)}.`,
        };
      cursor = anchorAt + 1;
    }
    const oldLines = hunk.lines.filter((line) => line.op !== '+').map((line) => line.text);
    const newLines = hunk.lines.filter((line) => line.op !== '-').map((line) => line.text);
    let at: number;
    if (oldLines.length === 0) {
      at =
        hunk.oldStart !== undefined
          ? Math.min(Math.max(hunk.oldStart, cursor), lines.length)
          : hunk.anchor !== undefined
            ? cursor
            : lines.length;
    } else {
      const hinted =
        hunk.oldStart !== undefined ? findSequence(lines, oldLines, Math.max(cursor, hunk.oldStart - 1), false) : -1;
      at = hinted !== -1 ? hinted : findSequence(lines, oldLines, cursor, hunk.atEndOfFile === true);
      if (at === -1) {
        return {
          ok: false,
          message: `Hunk ${number + 1} of ${filePath} did not apply: these lines were not found${cursor > 0 ? ` after line ${cursor}` : ''}:\n${preview(oldLines)}\nView the file and make the context and removed lines match it exactly.`,
        };
      }
    }
    lines.splice(at, oldLines.length, ...newLines);
    cursor = at + newLines.length;
  }
  const text = lines.join('\n');
  return { ok: true, text: lines.length > 0 && (trailingNewline || original === '') ? `${text}\n` : text };
}
