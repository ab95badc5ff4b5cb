import { stat } from 'node:fs/promises';
import type { Workspace } from '../core/workspace.js';
import { capText, OUTPUT_BOUNDS } from '../core/output-bounds.js';
import type { ToolResult } from '../core/result.js';
import { errorResult, textResult } from '../core/result.js';
import { listDirectory } from './directory-listing.js';
import type { EditHistory } from './edit-history.js';
import { viewLargeFile } from './large-file-view.js';
import {
  decoded,
  MAX_EDITABLE_BYTES,
  numberLines,
  occurrenceLines,
  readAtMost,
  readTextFile,
  splitLines,
} from './text-file.js';

/** Characters of a file view shown to the model. */
export const MAX_VIEW_CHARS = OUTPUT_BOUNDS.viewChars;

export type EditTarget = {
  readonly filePath: string;
  readonly conversationId: string;
  readonly history: EditHistory;
  /** How the file is read, written and removed: the workspace's own operations, which follow no swapped symlink. */
  readonly files: Pick<Workspace, 'openFile' | 'writeFile' | 'removeFile'>;
};

async function kindOf(filePath: string): Promise<'file' | 'directory' | 'other' | 'missing'> {
  try {
    const info = await stat(filePath);
    return info.isFile() ? 'file' : info.isDirectory() ? 'directory' : 'other';
  } catch {
    return 'missing';
  }
}

function snippet(text: string, firstChangedLine: number, changedLineCount: number, filePath: string): string {
  const lines = splitLines(text);
  const start = Math.max(1, firstChangedLine - 4);
  const end = Math.min(lines.length, firstChangedLine + changedLineCount + 3);
  return `Here is a snippet of ${filePath} (lines ${start}-${end}) after the edit:\n${numberLines(lines.slice(start - 1, end), start)}\nReview the change and edit again if needed.`;
}

async function editable(target: EditTarget): Promise<{ ok: true; text: string } | { ok: false; result: ToolResult }> {
  const kind = await kindOf(target.filePath);
  if (kind === 'missing')
    return {
      ok: false,
      result: errorResult(`The file ${target.filePath} does not exist. Create it with command "create".`),
    };
  if (kind !== 'file')
    return { ok: false, result: errorResult(`${target.filePath} is not a regular file (it is a ${kind}).`) };
  const read = await readTextFile(target.filePath, (file) => target.files.openFile(file));
  return read.ok ? read : { ok: false, result: errorResult(read.message) };
}

async function save(target: EditTarget, previous: string | null, text: string): Promise<void> {
  await target.files.writeFile(target.filePath, text);
  target.history.push(target.conversationId, target.filePath, previous);
}

/** The file's text, or a view of it when it is too large to read whole (then read only as far as the view needs). */
async function readForView(
  filePath: string,
  viewRange: readonly number[] | undefined,
  files: Pick<Workspace, 'openFile'>,
): Promise<{ text: string } | { result: ToolResult }> {
  const handle = await files.openFile(filePath);
  try {
    const { size } = await handle.stat();
    if (size > MAX_EDITABLE_BYTES)
      return { result: await viewLargeFile(handle, filePath, size, viewRange as [number, number] | undefined) };
    const bytes = await readAtMost(handle, MAX_EDITABLE_BYTES, size);
    // grown past the bound since it was looked at: viewed in parts too
    if (bytes.length > MAX_EDITABLE_BYTES)
      return {
        result: await viewLargeFile(
          handle,
          filePath,
          (await handle.stat()).size,
          viewRange as [number, number] | undefined,
        ),
      };
    const read = decoded(filePath, bytes);
    return read.ok ? { text: read.text } : { result: errorResult(read.message) };
  } finally {
    await handle.close();
  }
}

export async function viewPath(
  filePath: string,
  viewRange: readonly number[] | undefined,
  files: Pick<Workspace, 'openFile'>,
): Promise<ToolResult> {
  const kind = await kindOf(filePath);
  if (kind === 'missing') return errorResult(`The path ${filePath} does not exist.`);
  if (kind === 'directory') {
    if (viewRange !== undefined) return errorResult('view_range is only allowed when viewing a file, not a directory.');
    return textResult(capText(await listDirectory(filePath), MAX_VIEW_CHARS, 'View a subdirectory to see more.'));
  }
  if (kind !== 'file') return errorResult(`${filePath} is not a regular file or directory.`);
  const read = await readForView(filePath, viewRange, files);
  if ('result' in read) return read.result;
  const lines = splitLines(read.text);
  let start = 1;
  let end = lines.length;
  if (viewRange !== undefined) {
    const [from, to] = viewRange as [number, number];
    if (from < 1 || from > Math.max(lines.length, 1)) {
      return errorResult(
        `Invalid view_range [${from}, ${to}]: the first line must be between 1 and ${lines.length} (the file has ${lines.length} lines).`,
      );
    }
    if (to !== -1 && (to < from || to > lines.length)) {
      return errorResult(
        `Invalid view_range [${from}, ${to}]: the last line must be -1 (end of file) or between ${from} and ${lines.length}.`,
      );
    }
    start = from;
    end = to === -1 ? lines.length : to;
  }
  const body = numberLines(lines.slice(start - 1, end), start);
  const header = `Here is the result of running \`cat -n\` on ${filePath}${viewRange === undefined ? '' : ` (lines ${start}-${end})`}:\n`;
  return textResult(
    capText(
      header + body,
      MAX_VIEW_CHARS,
      'Use view_range to view the rest of the file, or grep to find what you need.',
    ),
  );
}

export async function createFile(target: EditTarget, fileText: string): Promise<ToolResult> {
  if ((await kindOf(target.filePath)) !== 'missing') {
    return errorResult(
      `The file ${target.filePath} already exists; "create" never overwrites. Use str_replace or insert to change it.`,
    );
  }
  await save(target, null, fileText);
  return textResult(`File created successfully at ${target.filePath} (${splitLines(fileText).length} lines).`);
}

export async function replaceText(target: EditTarget, oldText: string, newText: string): Promise<ToolResult> {
  if (oldText === '') return errorResult('old_str must not be empty. To add text, use the "insert" command.');
  if (oldText === newText) return errorResult('old_str and new_str are identical; nothing would change.');
  const file = await editable(target);
  if (!file.ok) return file.result;
  const lines = occurrenceLines(file.text, oldText);
  if (lines.length === 0) {
    return errorResult(
      `No replacement was performed: old_str did not appear verbatim in ${target.filePath}. Check whitespace and indentation (view the file first), and include exactly the existing text.`,
    );
  }
  if (lines.length > 1) {
    return errorResult(
      `No replacement was performed: old_str occurs ${lines.length} times in ${target.filePath}, at lines ${lines.join(', ')}. Include more surrounding context so that it matches exactly once.`,
    );
  }
  const index = file.text.indexOf(oldText);
  const updated = file.text.slice(0, index) + newText + file.text.slice(index + oldText.length);
  await save(target, file.text, updated);
  return textResult(
    `The file ${target.filePath} has been edited. ${snippet(updated, lines[0] ?? 1, splitLines(newText).length, target.filePath)}`,
  );
}

export async function insertText(target: EditTarget, afterLine: number, newText: string): Promise<ToolResult> {
  const file = await editable(target);
  if (!file.ok) return file.result;
  const lines = splitLines(file.text);
  if (afterLine > lines.length) {
    return errorResult(
      `Invalid insert_line ${afterLine}: it must be between 0 (start of file) and ${lines.length} (the file has ${lines.length} lines).`,
    );
  }
  const inserted = splitLines(newText);
  const updatedLines = [...lines.slice(0, afterLine), ...inserted, ...lines.slice(afterLine)];
  const trailingNewline = file.text === '' || file.text.endsWith('\n');
  const updated = updatedLines.join('\n') + (trailingNewline && updatedLines.length > 0 ? '\n' : '');
  await save(target, file.text, updated);
  return textResult(
    `The file ${target.filePath} has been edited. ${snippet(updated, afterLine + 1, inserted.length, target.filePath)}`,
  );
}

export async function undoEdit(target: EditTarget): Promise<ToolResult> {
  const previous = target.history.pop(target.conversationId, target.filePath);
  if (previous === undefined) return errorResult(`There is no edit of ${target.filePath} to undo.`);
  if (previous === null) {
    await target.files.removeFile(target.filePath);
    return textResult(`Undid the creation of ${target.filePath}; the file was removed.`);
  }
  await target.files.writeFile(target.filePath, previous);
  return textResult(
    `Last edit to ${target.filePath} undone. ${snippet(previous, 1, 0, target.filePath).replace('after the edit', 'now')}`,
  );
}
