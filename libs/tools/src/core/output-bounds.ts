import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError } from './errors.js';

/** Default number of characters of one tool output the model sees (OpenHands' MAX_CMD_OUTPUT_SIZE). */
export const DEFAULT_OUTPUT_LIMIT = 30_000;

export type BoundOutputOptions = {
  /** Directory for the full text; without it nothing is saved. */
  readonly outputDir?: string;
  /** Used in the file name: `<toolName>_output_<hash8>.txt`. */
  readonly toolName: string;
  readonly limit?: number;
  /** Applied to the text first (masking secrets), so neither the result nor the saved file holds what it hides. */
  readonly redact?: (text: string) => string;
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

/**
 * Keep `text` within `limit` characters: when it is longer, the model gets the
 * head and the tail around a notice, and the full text is saved under
 * `outputDir` with the path and the first omitted line in the notice so the
 * model can read the rest with `sed -n` or `file_editor view`.
 */
export async function boundOutput(raw: string, options: BoundOutputOptions): Promise<BoundedOutput> {
  const text = options.redact ? options.redact(raw) : raw;
  const limit = options.limit ?? DEFAULT_OUTPUT_LIMIT;
  if (text.length <= limit) return { text, truncated: false };
  const saved = await save(text, options);
  const totalLines = countLines(text);
  const describe = (head: string): string => {
    const firstOmitted = countLines(head);
    const where =
      typeof saved === 'string'
        ? `The full output (${text.length} characters, ${totalLines} lines) was saved to ${saved}; the omitted part starts at line ${firstOmitted}. Read it with \`sed -n '${firstOmitted},${firstOmitted + 199}p' ${saved}\` or file_editor view with a view_range.`
        : saved instanceof Error
          ? `The full output could not be saved (${saved.message}).`
          : 'The full output was not saved.';
    return `\n\n<response clipped: ${text.length} characters in total, the middle was omitted. ${where}>\n\n`;
  };
  // The notice length depends on the head only through a line number, so size it once generously.
  const budget = Math.max(0, limit - describe('x'.repeat(0)).length - 16);
  let head = text.slice(0, Math.ceil(budget / 2));
  const lastNewline = head.lastIndexOf('\n');
  if (lastNewline > head.length / 2) head = head.slice(0, lastNewline + 1);
  const tail = text.slice(text.length - (budget - head.length));
  const notice = describe(head);
  const result: BoundedOutput = { text: `${head}${notice}${tail}`, truncated: true };
  return typeof saved === 'string' ? { ...result, savedPath: saved } : result;
}

/** Cut text at `limit` characters with a notice, without saving it (file views). */
export function capText(text: string, limit: number, hint: string): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n<response clipped: ${text.length - limit} more characters not shown. ${hint}>`;
}
