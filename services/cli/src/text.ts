/** Cuts `text` to `max` characters, ending with `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** The first `max` lines, and a `… N more lines` line for the rest. */
export function limitLines(lines: readonly string[], max: number): string[] {
  if (lines.length <= max) return [...lines];
  const more = lines.length - max;
  return [...lines.slice(0, max), `… ${more} more line${more === 1 ? '' : 's'}`];
}

/** `prefix` before the first line of `text`; later lines indented by `indent` spaces. */
export function indentBlock(prefix: string, text: string, indent: number): string[] {
  const pad = ' '.repeat(indent);
  return text.split('\n').map((line, index) => (index === 0 ? `${prefix}${line}` : line === '' ? '' : `${pad}${line}`));
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, index) => (widths[index] = Math.max(widths[index] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index]!)))
      .join('  ')
      .trimEnd(),
  );
}
