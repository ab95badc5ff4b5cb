import { describe, expect, it } from 'vitest';
import { parsePorcelainV2 } from './git-status.js';

const OUTPUT = [
  '# branch.oid 0123456789abcdef0123456789abcdef01234567',
  '# branch.head main',
  '# branch.upstream origin/main',
  '# branch.ab +2 -1',
  '1 .M N... 100644 100644 100644 aaaa bbbb app with space.py',
  '2 R. N... 100644 100644 100644 aaaa aaaa R100 lib/kept.txt',
  'lib/keep.txt',
  'u UU N... 100644 100644 100644 100644 aaaa bbbb cccc both.txt',
  '? notes.md',
  '',
].join('\0');

describe('git status porcelain v2, as the tool runner printed it', () => {
  it('reads the branch and every kind of record, paths from the workspace root', () => {
    expect(parsePorcelainV2(OUTPUT, 'src', false)).toEqual({
      branch: {
        head: 'main',
        oid: '0123456789abcdef0123456789abcdef01234567',
        upstream: 'origin/main',
        ahead: 2,
        behind: 1,
      },
      entries: [
        { path: 'src/app with space.py', kind: 'changed', index: '.', worktree: 'M' },
        { path: 'src/lib/kept.txt', original_path: 'src/lib/keep.txt', kind: 'renamed', index: 'R', worktree: '.' },
        { path: 'src/both.txt', kind: 'unmerged', index: 'U', worktree: 'U' },
        { path: 'src/notes.md', kind: 'untracked', index: '?', worktree: '?' },
      ],
      truncated: false,
    });
  });

  it('reads a repository before its first commit, detached, at the workspace root', () => {
    expect(parsePorcelainV2('# branch.oid (initial)\0# branch.head (detached)\0? a\0', '', false)).toEqual({
      branch: { head: null, oid: null, upstream: null, ahead: null, behind: null },
      entries: [{ path: 'a', kind: 'untracked', index: '?', worktree: '?' }],
      truncated: false,
    });
  });

  it('drops a record the cut split, wherever the cut fell, and skips what is not a record', () => {
    for (let cut = 1; cut < OUTPUT.length; cut += 1) {
      const parsed = parsePorcelainV2(OUTPUT.slice(0, cut), 'src', true);
      expect(parsed.truncated).toBe(true);
      for (const entry of parsed.entries) expect(parsePorcelainV2(OUTPUT, 'src', false).entries).toContainEqual(entry);
    }
    expect(parsePorcelainV2('garbage\x001 X\0? \0', '', false).entries).toEqual([]);
  });
});
