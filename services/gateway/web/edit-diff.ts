import { diffLines } from 'diff';
import { h } from './dom.js';

/** A line of a diff as shown: added, removed, or context. */
type DiffLine = { readonly kind: 'add' | 'del' | 'same' | 'meta'; readonly text: string };

/**
 * An edit's change in place, as a diff of lines: what `old` becomes (`new`), each line marked +
 * or − (context lines unmarked). An empty `old` shows a file written or lines inserted: all added.
 */
export function editDiff(old: string, next: string, testId = 'edit-diff'): HTMLElement {
  const lines: DiffLine[] = [];
  for (const change of diffLines(old, next)) {
    const kind = change.added ? 'add' : change.removed ? 'del' : 'same';
    for (const text of splitLines(change.value)) lines.push({ kind, text });
  }
  return render(lines, testId);
}

/** A patch the agent wrote (unified diff, or the `*** Begin Patch` format) with its lines marked as a diff. */
export function patchDiff(patch: string, testId = 'edit-diff'): HTMLElement {
  const lines = splitLines(patch).map((text): DiffLine => {
    if (text.startsWith('+++') || text.startsWith('---') || text.startsWith('@@') || text.startsWith('***'))
      return { kind: 'meta', text };
    if (text.startsWith('+')) return { kind: 'add', text: text.slice(1) };
    if (text.startsWith('-')) return { kind: 'del', text: text.slice(1) };
    return { kind: 'same', text: text.startsWith(' ') ? text.slice(1) : text };
  });
  return render(lines, testId);
}

const MARKS = { add: '+', del: '-', same: ' ', meta: '' } as const;

function render(lines: readonly DiffLine[], testId: string): HTMLElement {
  return h(
    'pre',
    { class: 'code edit-diff', 'data-testid': testId },
    ...lines.map((line) =>
      h(
        'span',
        { class: `diff-line diff-${line.kind}`, 'data-kind': line.kind },
        `${MARKS[line.kind]}${line.kind === 'meta' ? '' : ' '}${line.text}\n`,
      ),
    ),
  );
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
