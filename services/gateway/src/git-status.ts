import { MAX_STATUS_ENTRIES, type GitStatus, type GitStatusEntry } from '@flotilla/api';

type ParsedStatus = Pick<GitStatus, 'branch' | 'entries' | 'truncated'>;

/**
 * What the tool runner's `git status --porcelain=v2 -z --branch` printed (masked, cut at a
 * record): the branch headers, then one record per changed path (`1` changed, `2` renamed or
 * copied with its source in the next field, `u` unmerged, `?` untracked), paths relative to the
 * repository's root. `root` (the repository's root, relative to the workspace's) is put before
 * each path, so every path is one the files routes take. A record cut off is dropped; anything
 * that is not a record is skipped (the output came from the agent's sandbox).
 */
export function parsePorcelainV2(output: string, root: string, cut: boolean): ParsedStatus {
  const fields = output.split('\0');
  // after a whole output the last field is empty; after a cut one it is a part of a record
  fields.pop();
  const branch: ParsedStatus['branch'] = { head: null, oid: null, upstream: null, ahead: null, behind: null };
  const entries: GitStatusEntry[] = [];
  let truncated = cut;
  const inWorkspace = (file: string): string => (root === '' ? file : `${root}/${file}`);
  for (let index = 0; index < fields.length; index += 1) {
    const field = fields[index]!;
    if (field.startsWith('# ')) {
      const [, name, ...values] = field.split(' ');
      const value = values.join(' ');
      if (name === 'branch.oid') branch.oid = value === '(initial)' ? null : value;
      else if (name === 'branch.head') branch.head = value === '(detached)' ? null : value;
      else if (name === 'branch.upstream') branch.upstream = value;
      else if (name === 'branch.ab') {
        const match = /^\+(\d+) -(\d+)$/.exec(value);
        if (match) [branch.ahead, branch.behind] = [Number(match[1]), Number(match[2])];
      }
      continue;
    }
    if (entries.length >= MAX_STATUS_ENTRIES) {
      truncated = true;
      break;
    }
    const kind = field[0];
    if (kind === '?' && field[1] === ' ' && field.length > 2) {
      entries.push({ path: inWorkspace(field.slice(2)), kind: 'untracked', index: '?', worktree: '?' });
    } else if (kind === '1' || kind === 'u') {
      // 1 XY sub mH mI mW hH hI path; u XY sub m1 m2 m3 mW h1 h2 h3 path
      const parts = splitFirst(field, kind === '1' ? 8 : 10);
      const xy = parts?.fields[1];
      if (!parts || xy?.length !== 2 || parts.rest === '') continue;
      entries.push({
        path: inWorkspace(parts.rest),
        kind: kind === '1' ? 'changed' : 'unmerged',
        index: xy[0]!,
        worktree: xy[1]!,
      });
    } else if (kind === '2') {
      // 2 XY sub mH mI mW hH hI Xscore path, then the source path as the next field (absent when the output was cut there)
      const parts = splitFirst(field, 9);
      const source = fields[index + 1];
      index += 1;
      const xy = parts?.fields[1];
      if (!parts || source === undefined || xy?.length !== 2 || parts.rest === '' || source === '') {
        if (source === undefined) truncated = true;
        continue;
      }
      entries.push({
        path: inWorkspace(parts.rest),
        original_path: inWorkspace(source),
        kind: parts.fields[8]!.startsWith('C') ? 'copied' : 'renamed',
        index: xy[0]!,
        worktree: xy[1]!,
      });
    }
  }
  return { branch, entries, truncated };
}

/** The first `count` space-separated fields of a record and the rest (a path, which may hold spaces). */
function splitFirst(record: string, count: number): { fields: string[]; rest: string } | undefined {
  const fields: string[] = [];
  let at = 0;
  for (let index = 0; index < count; index += 1) {
    const end = record.indexOf(' ', at);
    if (end < 0) return undefined;
    fields.push(record.slice(at, end));
    at = end + 1;
  }
  return { fields, rest: record.slice(at) };
}
