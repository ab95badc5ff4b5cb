import type { FileChange, Hunk, HunkLine, ParsedPatch } from './patch-model.js';

const ADD = '*** Add File: ';
const DELETE = '*** Delete File: ';
const UPDATE = '*** Update File: ';
const MOVE = '*** Move to: ';
const END_OF_FILE = '*** End of File';

function isHeader(line: string): boolean {
  return line.startsWith('*** ');
}

/** Parse the OpenAI `*** Begin Patch` … `*** End Patch` format. */
export function parseOpenAiPatch(patch: string): ParsedPatch {
  const lines = patch.replace(/\r\n/g, '\n').split('\n');
  const begin = lines.findIndex((line) => line.trim() === '*** Begin Patch');
  const end = lines.findIndex((line, index) => index > begin && line.trim() === '*** End Patch');
  if (begin === -1 || end === -1)
    return { ok: false, message: 'The patch must start with "*** Begin Patch" and end with "*** End Patch".' };
  const changes: FileChange[] = [];
  let index = begin + 1;
  while (index < end) {
    const line = lines[index] ?? '';
    if (line.startsWith(ADD)) {
      const content: string[] = [];
      index += 1;
      while (index < end && !isHeader(lines[index] ?? '')) {
        const body = lines[index] ?? '';
        if (!body.startsWith('+'))
          return {
            ok: false,
            message: `Line ${index + 1}: every line of an added file must start with "+", got ${JSON.stringify(body)}.`,
          };
        content.push(body.slice(1));
        index += 1;
      }
      changes.push({
        kind: 'add',
        path: line.slice(ADD.length).trim(),
        content: content.length === 0 ? '' : `${content.join('\n')}\n`,
      });
    } else if (line.startsWith(DELETE)) {
      changes.push({ kind: 'delete', path: line.slice(DELETE.length).trim() });
      index += 1;
    } else if (line.startsWith(UPDATE)) {
      const filePath = line.slice(UPDATE.length).trim();
      index += 1;
      let moveTo: string | undefined;
      if ((lines[index] ?? '').startsWith(MOVE)) {
        moveTo = (lines[index] ?? '').slice(MOVE.length).trim();
        index += 1;
      }
      const hunks: Hunk[] = [];
      let current: { anchor?: string; lines: HunkLine[]; atEndOfFile?: boolean } | undefined;
      while (index < end && (!isHeader(lines[index] ?? '') || lines[index] === END_OF_FILE)) {
        const body = lines[index] ?? '';
        if (body === END_OF_FILE) {
          if (current !== undefined) current.atEndOfFile = true;
        } else if (body.startsWith('@@')) {
          if (current !== undefined && current.lines.length > 0) hunks.push(current);
          const anchor = body.slice(2).trim();
          current = anchor === '' ? { lines: [] } : { anchor, lines: [] };
        } else {
          current ??= { lines: [] };
          const op = body[0] ?? ' ';
          if (op !== ' ' && op !== '-' && op !== '+') {
            return {
              ok: false,
              message: `Line ${index + 1} in the update of ${filePath}: hunk lines must start with " ", "-" or "+", got ${JSON.stringify(body)}.`,
            };
          }
          current.lines.push({ op, text: body.slice(1) });
        }
        index += 1;
      }
      if (current !== undefined && current.lines.length > 0) hunks.push(current);
      if (hunks.length === 0 && moveTo === undefined)
        return { ok: false, message: `The update of ${filePath} has no hunks.` };
      changes.push(
        moveTo === undefined
          ? { kind: 'update', path: filePath, hunks }
          : { kind: 'update', path: filePath, moveTo, hunks },
      );
    } else if (line.trim() === '') {
      index += 1;
    } else {
      return {
        ok: false,
        message: `Line ${index + 1}: expected "*** Add File:", "*** Update File:" or "*** Delete File:", got ${JSON.stringify(line)}.`,
      };
    }
  }
  if (changes.length === 0) return { ok: false, message: 'The patch contains no file changes.' };
  return { ok: true, changes };
}
