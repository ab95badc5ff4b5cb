import type { FileChange, Hunk, HunkLine, ParsedPatch } from './patch-model.js';

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function headerPath(line: string): string {
  const raw = line.slice(4).split('\t')[0]?.trim() ?? '';
  return raw.startsWith('"') && raw.endsWith('"') ? (JSON.parse(raw) as string) : raw;
}

function stripPrefix(filePath: string, prefix: 'a/' | 'b/'): string {
  return filePath.startsWith(prefix) ? filePath.slice(2) : filePath;
}

/** Parse a unified diff (`---`/`+++` headers and `@@` hunks, git-style or plain). */
export function parseUnifiedDiff(patch: string): ParsedPatch {
  const lines = patch.replace(/\r\n/g, '\n').split('\n');
  const changes: FileChange[] = [];
  let index = 0;
  while (index < lines.length) {
    if (!(lines[index] ?? '').startsWith('--- ') || !(lines[index + 1] ?? '').startsWith('+++ ')) {
      index += 1;
      continue;
    }
    const oldPath = headerPath(lines[index] ?? '');
    const newPath = headerPath(lines[index + 1] ?? '');
    index += 2;
    const hunks: Hunk[] = [];
    const added: string[] = [];
    while (index < lines.length) {
      const header = HUNK_HEADER.exec(lines[index] ?? '');
      if (header === null) break;
      let oldRemaining = header[2] === undefined ? 1 : Number(header[2]);
      let newRemaining = header[4] === undefined ? 1 : Number(header[4]);
      const hunkLines: HunkLine[] = [];
      index += 1;
      while (index < lines.length && (oldRemaining > 0 || newRemaining > 0)) {
        const body = lines[index] ?? '';
        index += 1;
        if (body.startsWith('\\')) continue;
        const op = body === '' ? ' ' : body[0];
        if (op !== ' ' && op !== '-' && op !== '+') {
          return {
            ok: false,
            message: `Malformed hunk in the diff of ${newPath}: unexpected line ${JSON.stringify(body)} (the @@ line counts may be wrong).`,
          };
        }
        hunkLines.push({ op, text: body.slice(1) });
        if (op !== '+') oldRemaining -= 1;
        if (op !== '-') newRemaining -= 1;
        if (op === '+') added.push(body.slice(1));
      }
      while ((lines[index] ?? '').startsWith('\\')) index += 1;
      hunks.push({ oldStart: Number(header[1]), lines: hunkLines });
    }
    const gitStyle = oldPath.startsWith('a/') || newPath.startsWith('b/');
    const source = gitStyle ? stripPrefix(oldPath, 'a/') : oldPath;
    const target = gitStyle ? stripPrefix(newPath, 'b/') : newPath;
    if (oldPath === '/dev/null')
      changes.push({ kind: 'add', path: target, content: added.length === 0 ? '' : `${added.join('\n')}\n` });
    else if (newPath === '/dev/null') changes.push({ kind: 'delete', path: source });
    else if (hunks.length === 0) return { ok: false, message: `The diff of ${target} has no @@ hunks.` };
    else
      changes.push(
        source === target
          ? { kind: 'update', path: target, hunks }
          : { kind: 'update', path: source, moveTo: target, hunks },
      );
  }
  if (changes.length === 0)
    return {
      ok: false,
      message: 'No file changes found: expected a unified diff (--- / +++ / @@ lines) or a "*** Begin Patch" block.',
    };
  return { ok: true, changes };
}
