/** Percentile of an unsorted sample (nearest rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function ms(value: number): string {
  return `${value.toFixed(3)} ms`;
}

export function ratio(value: number, baseline: number): string {
  return `${(value / baseline).toFixed(2)}x`;
}

/** Prints a small aligned table. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')).join('\n');
}

/**
 * An unloaded cycle is measured on processes warmed by earlier conversations (a process's code
 * runs unoptimized until V8 finds it hot, and the cycle keeps getting shorter for ~1,000 cycles),
 * then on a conversation of its own whose first FIRST_CYCLES_LEFT_OUT cycles are left out: the
 * warm-up's cycles in conversations of at most this many (below an agent's 500 iterations per run,
 * and short enough that no history grows long).
 */
export const WARMUP_CONVERSATION_CYCLES = 400;
export const FIRST_CYCLES_LEFT_OUT = 10;

/** The warm-up conversations' lengths in cycles, `cycles` in all. */
export function warmupConversations(cycles: number): number[] {
  const lengths: number[] = [];
  for (let left = cycles; left > 0; left -= WARMUP_CONVERSATION_CYCLES)
    lengths.push(Math.min(left, WARMUP_CONVERSATION_CYCLES));
  return lengths;
}
