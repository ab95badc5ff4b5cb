import type { FileHandle } from 'node:fs/promises';
import { formatCount, OUTPUT_BOUNDS } from '../core/output-bounds.js';
import type { ToolResult } from '../core/result.js';
import { errorResult, textResult } from '../core/result.js';
import { notTextMessage } from './text-file.js';

const CHUNK_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;
/** What `cat -n` puts before a line: the number right-aligned in 6, and a tab. */
const NUMBER_WIDTH = 7;

const numbered = (line: number, text: string): string => `${String(line).padStart(6)}\t${text}`;

type Stop = 'range_end' | 'full' | 'end_of_file' | 'deadline';

/** What a scan of the file found: the numbered lines, and why it stopped. */
type Scan = {
  readonly shown: string[];
  readonly firstShown: number;
  readonly lastShown: number;
  /** A line longer than the view's room, shown cut. */
  readonly cutLine?: number;
  readonly stop: Stop;
  /** Lines seen, and bytes read, when it stopped. */
  readonly lines: number;
  readonly bytes: number;
};

/**
 * Read lines `start`..`end` of an open file in chunks, keeping only what the view shows: it stops
 * at `end`, when the view is full (before a line that does not fit, or, when that line is the
 * first, after its cut start, so a 1 GB line costs one chunk), at the end of the file, or at the
 * deadline.
 */
async function scanLines(handle: FileHandle, start: number, end: number, deadline: number): Promise<Scan> {
  const budget = OUTPUT_BOUNDS.viewChars;
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const shown: string[] = [];
  let shownChars = 0;
  let line = 1;
  let position = 0;
  let current: Buffer[] = [];
  let currentBytes = 0;
  let endedWithNewline = false;
  const room = (): number => Math.max(1, budget - shownChars - NUMBER_WIDTH);
  const finish = (cut: boolean): void => {
    // a cut line may end inside a character: a streaming decode leaves its start out
    const text = new TextDecoder('utf-8').decode(Buffer.concat(current, currentBytes), { stream: cut });
    shown.push(numbered(line, text));
    shownChars += NUMBER_WIDTH + text.length + 1;
    current = [];
    currentBytes = 0;
  };
  const scan = (stop: Stop, extra: Partial<Scan> = {}): Scan => ({
    shown,
    firstShown: start,
    lastShown: start + shown.length - 1,
    stop,
    lines: line,
    bytes: position,
    ...extra,
  });
  for (;;) {
    if (Date.now() > deadline) return scan('deadline');
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position);
    if (bytesRead === 0) {
      if (currentBytes > 0) finish(false);
      return scan('end_of_file', { lines: position === 0 ? 0 : endedWithNewline ? line - 1 : line });
    }
    const chunk = buffer.subarray(0, bytesRead);
    endedWithNewline = chunk[bytesRead - 1] === NEWLINE;
    let offset = 0;
    while (offset < bytesRead) {
      const newline = chunk.indexOf(NEWLINE, offset);
      const pieceEnd = newline === -1 ? bytesRead : newline;
      if (line >= start) {
        const take = Math.max(0, Math.min(pieceEnd - offset, room() - currentBytes));
        current.push(Buffer.from(chunk.subarray(offset, offset + take)));
        currentBytes += take;
        if (take < pieceEnd - offset) {
          // a line past the room left: the view ends before it, unless it is the first (then it is shown cut)
          if (shown.length > 0) return scan('full');
          finish(true);
          return scan('full', { cutLine: line, bytes: position + offset + take });
        }
      }
      if (newline === -1) break;
      if (line >= start) {
        finish(false);
        if (shownChars >= budget) return scan(line >= end ? 'range_end' : 'full', { bytes: position + newline + 1 });
      }
      line += 1;
      offset = newline + 1;
      if (line > end) return scan('range_end', { bytes: position + offset });
    }
    position += bytesRead;
  }
}

/**
 * A view of a file too large to read whole (past OUTPUT_BOUNDS.editableBytes): its first lines, or
 * those of `viewRange`, read as far as the view needs, never the whole file into memory, and
 * within OUTPUT_BOUNDS.viewReadMs. Every way it stops short is said in a note with what to do next.
 */
export async function viewLargeFile(
  handle: FileHandle,
  filePath: string,
  size: number,
  viewRange: readonly [number, number] | undefined,
): Promise<ToolResult> {
  const first = Buffer.alloc(Math.min(8192, size));
  await handle.read(first, 0, first.length, 0);
  if (first.includes(0)) return errorResult(notTextMessage(filePath, size));
  const [from, to] = viewRange ?? [1, -1];
  if (from < 1) return errorResult(`Invalid view_range [${from}, ${to}]: the first line must be 1 or more.`);
  if (to !== -1 && to < from)
    return errorResult(
      `Invalid view_range [${from}, ${to}]: the last line must be -1 (end of file) or at least ${from}.`,
    );
  const scan = await scanLines(
    handle,
    from,
    to === -1 ? Number.POSITIVE_INFINITY : to,
    Date.now() + OUTPUT_BOUNDS.viewReadMs,
  );
  if (scan.shown.length === 0) {
    if (scan.stop === 'deadline') {
      return errorResult(
        `Reading ${filePath} (${formatCount(size)} bytes) stopped after ${OUTPUT_BOUNDS.viewReadMs / 1_000} s at line ${formatCount(scan.lines)} (byte ${formatCount(scan.bytes)}), before line ${from}. Find what you need with grep -n, or read by bytes: \`tail -c +${scan.bytes + 1} ${filePath} | head -c 16000\`.`,
      );
    }
    return errorResult(
      `Invalid view_range [${from}, ${to}]: the first line must be between 1 and ${scan.lines} (the file has ${scan.lines} lines).`,
    );
  }
  const notes: string[] = [];
  const shownRange = `lines ${scan.firstShown}-${scan.lastShown}`;
  if (scan.cutLine !== undefined) {
    const kept = scan.shown.at(-1)!.length - NUMBER_WIDTH;
    notes.push(
      `[Line ${scan.cutLine} is longer than ${formatCount(kept)} characters; only its first ${formatCount(kept)} are shown. Read on by bytes in the terminal: \`tail -c +${scan.bytes + 1} ${filePath} | head -c 16000\`.]`,
    );
  }
  if (viewRange === undefined) {
    if (scan.stop !== 'end_of_file') {
      notes.push(
        `[The file is ${formatCount(size)} bytes, too large to show whole: ${shownRange} are shown. Use view_range to view other lines (e.g. [${scan.lastShown + 1}, ${scan.lastShown + 200}]), or grep -n to find what you need.]`,
      );
    }
  } else if (scan.stop === 'full' && scan.cutLine === undefined) {
    notes.push(
      `[A view shows at most ${formatCount(OUTPUT_BOUNDS.viewChars)} characters: ${shownRange} of the range are shown; view from line ${scan.lastShown + 1} next.]`,
    );
  } else if (scan.stop === 'end_of_file' && to !== -1 && scan.lastShown < to) {
    notes.push(`[The file ends at line ${scan.lastShown}.]`);
  }
  if (scan.stop === 'deadline') {
    notes.push(
      `[Reading stopped after ${OUTPUT_BOUNDS.viewReadMs / 1_000} s at line ${formatCount(scan.lines)}; the file is ${formatCount(size)} bytes. Use grep -n or sed -n in the terminal for parts further in.]`,
    );
  }
  const header = `Here is the result of running \`cat -n\` on ${filePath} (${shownRange}):\n`;
  return textResult(`${header}${scan.shown.join('\n')}${notes.length > 0 ? `\n${notes.join('\n')}` : ''}`);
}
