import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from './errors.js';

/**
 * Every bound the tools put on what they read, keep and show, in one place: what a hostile
 * output or file (100 MB printed, a 1 GB file, a 1 GB line) can cost the tool runner and the model.
 */
export const OUTPUT_BOUNDS = {
  /** Characters of one tool output the model sees (OpenHands' MAX_CMD_OUTPUT_SIZE). */
  outputChars: 30_000,
  /** Bytes of one command's output the terminal keeps in memory (its head and its tail) before the middle is dropped. */
  terminalBufferBytes: 10_000_000,
  /** Characters of a file view (and of one line in it). */
  viewChars: 16_000,
  /** Largest file the editor reads whole (edits, and views of it); a larger one is viewed in parts, read as far as the view needs. */
  editableBytes: 10 * 1024 * 1024,
  /** Longest a view of a large file reads before it shows what it found. */
  viewReadMs: 10_000,
} as const;

/** Default number of characters of one tool output the model sees. */
export const DEFAULT_OUTPUT_LIMIT = OUTPUT_BOUNDS.outputChars;

/** `1,073,741,824`: counts in notices, readable at a glance. */
export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

export type BoundOutputOptions = {
  /** Directory for the full text; without it nothing is saved. */
  readonly outputDir?: string;
  /** Used in the file name: `<toolName>_output_<hash8>.txt`. */
  readonly toolName: string;
  readonly limit?: number;
  /** Applied to the text first (masking secrets), so neither the result nor the saved file holds what it hides. */
  readonly redact?: (text: string) => string;
  /**
   * What the text stands for in all, when its middle was already dropped before it got here
   * (the terminal keeps a bounded head and tail of a command's output): the notice gives this
   * total (rounded: it may count bytes for characters) and says that the saved file holds only
   * what was kept.
   */
  readonly totalCharacters?: number;
};

export type BoundedOutput = {
  readonly text: string;
  readonly truncated: boolean;
  /** Path of the file holding the full text, when it was saved. */
  readonly savedPath?: string;
};

function countLines(text: string): number {
  let lines = 1;
  for (let index = text.indexOf('\n'); index !== -1; index = text.indexOf('\n', index + 1)) lines += 1;
  return lines;
}

async function save(text: string, options: BoundOutputOptions): Promise<string | Error | undefined> {
  if (options.outputDir === undefined) return undefined;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 8);
  const safeName = options.toolName.replace(/[^A-Za-z0-9_-]/g, '_');
  const file = path.join(options.outputDir, `${safeName}_output_${hash}.txt`);
  try {
    await mkdir(options.outputDir, { recursive: true });
    await writeFile(file, text, 'utf8');
    return file;
  } catch (error) {
    return new Error(describeError(error));
  }
}

/** Where the omitted part starts in the saved file, by line and by byte (a line may be all of it). */
type OmittedStart = { readonly line: number; readonly byte: number };

function notice(text: string, total: number, saved: string | Error | undefined, start: OmittedStart): string {
  const kept = total > text.length;
  const where =
    typeof saved === 'string'
      ? `${kept ? `Only its first and last parts were kept (the middle was dropped as it came; a line in the file marks where), and they were saved to ${saved}` : `The full output (${formatCount(countLines(text))} lines) was saved to ${saved}`}; the omitted part starts at line ${start.line} (byte ${start.byte}). Read it in pieces: \`sed -n '${start.line},${start.line + 199}p' ${saved}\` by lines, \`tail -c +${start.byte} ${saved} | head -c 20000\` by bytes (for long lines), or file_editor view with a view_range.`
      : saved instanceof Error
        ? `The full output could not be saved (${saved.message}).`
        : 'The full output was not saved.';
  const size = kept ? `about ${formatCount(Number(total.toPrecision(3)))}` : formatCount(total);
  return `\n\n<response clipped: the output was ${size} characters; the middle was omitted here. ${where}>\n\n`;
}

/**
 * Keep `text` within `limit` characters: when it is longer, the model gets the
 * head and the tail around a notice, and the full text is saved under
 * `outputDir` with the path and where the omitted part starts (line and byte) in the notice so
 * the model can read the rest with `sed -n`, `tail -c | head -c` or `file_editor view`.
 */
export async function boundOutput(raw: string, options: BoundOutputOptions): Promise<BoundedOutput> {
  const text = options.redact ? options.redact(raw) : raw;
  const limit = options.limit ?? DEFAULT_OUTPUT_LIMIT;
  if (text.length <= limit) return { text, truncated: false };
  const saved = await save(text, options);
  const total = Math.max(text.length, options.totalCharacters ?? text.length);
  // the notice's length depends on the head only through its numbers: size it with the largest
  const budget = Math.max(0, limit - notice(text, total, saved, { line: text.length, byte: text.length * 4 }).length);
  let head = text.slice(0, Math.ceil(budget / 2));
  const lastNewline = head.lastIndexOf('\n');
  if (lastNewline > head.length / 2) head = head.slice(0, lastNewline + 1);
  const tail = text.slice(text.length - (budget - head.length));
  const start = { line: countLines(head), byte: Buffer.byteLength(head) + 1 };
  const result: BoundedOutput = { text: `${head}${notice(text, total, saved, start)}${tail}`, truncated: true };
  return typeof saved === 'string' ? { ...result, savedPath: saved } : result;
}

/** Cut text at `limit` characters with a notice, without saving it (file views). */
export function capText(text: string, limit: number, hint: string): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n<response clipped: ${text.length - limit} more characters not shown. ${hint}>`;
}
