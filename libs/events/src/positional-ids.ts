import type { EventDraft } from './event.js';

/**
 * Event ids that say where their event is. A positional id is a UUID of version 8 (RFC 9562,
 * "custom") whose first 48 bits are the seq of the first event of the commit holding the event,
 * and whose other 74 bits are random:
 *
 *     00000000-0007-8c3f-9a12-4b5e6f7a8b9c   →   in the commit that starts at seq 7
 *
 * Finding the event of such an id costs one locate of that seq and one read of that commit,
 * whatever the conversation's length. The log refuses to write a positional id anywhere but in
 * the commit it names (`positionalIdIssues`), so the position an id says is always true. Other
 * ids (the random UUIDs of older events, ids a writer chose) are still valid; finding them reads
 * the log.
 */
const POSITIONAL = /^([0-9a-f]{8})-([0-9a-f]{4})-8([0-9a-f]{3})-([89ab][0-9a-f]{3})-([0-9a-f]{12})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8]([0-9a-f]{3})-([89ab][0-9a-f]{3})-([0-9a-f]{12})$/;
/** Positions a 48-bit field holds. */
export const MAX_POSITION = 2 ** 48 - 1;

/** The seq of the first event of the commit a positional id names, or undefined for any other id. */
export function positionOfEventId(id: string): number | undefined {
  const match = POSITIONAL.exec(id);
  if (!match) return undefined;
  const position = Number.parseInt(`${match[1]}${match[2]}`, 16);
  return position >= 1 ? position : undefined;
}

/**
 * The positional id for an event of the commit starting at `firstSeq`, keeping the random bits of
 * `id` when it is a UUID (so placing the same drafts at the same seq gives the same ids); other
 * ids are kept as they are.
 */
export function positionalId(id: string, firstSeq: number): string {
  const match = UUID.exec(id);
  if (!match || !Number.isSafeInteger(firstSeq) || firstSeq < 1 || firstSeq > MAX_POSITION) return id;
  const position = firstSeq.toString(16).padStart(12, '0');
  return `${position.slice(0, 8)}-${position.slice(8)}-8${match[1]}-${match[2]}-${match[3]}`;
}

/**
 * Gives the drafts of ONE commit, to be appended at the tail whose last seq is `firstSeq - 1`,
 * positional ids (`positionalId`), and points the references among them (`parent`, `action_id`,
 * `action_ids`, `forgotten_event_ids`) at the new ids. For drafts nothing outside them refers to
 * yet: the writer's own fresh drafts, right before it appends them (again at each new tail).
 */
export function withPositionalIds(drafts: readonly EventDraft[], firstSeq: number): EventDraft[] {
  const renamed = new Map<string, string>();
  for (const draft of drafts) {
    const id = positionalId(draft.id, firstSeq);
    if (id !== draft.id) renamed.set(draft.id, id);
  }
  if (renamed.size === 0) return [...drafts];
  const rename = (id: string): string => renamed.get(id) ?? id;
  return drafts.map((draft) => {
    const moved: Record<string, unknown> = { ...draft, id: rename(draft.id) };
    if (draft.parent !== undefined) moved['parent'] = rename(draft.parent);
    if ('action_id' in draft && typeof draft.action_id === 'string') moved['action_id'] = rename(draft.action_id);
    if ('action_ids' in draft) moved['action_ids'] = draft.action_ids.map(rename);
    if ('forgotten_event_ids' in draft) moved['forgotten_event_ids'] = draft.forgotten_event_ids.map(rename);
    return moved as EventDraft;
  });
}

/**
 * What is wrong with the positional ids of a commit starting at `firstSeq`: each one must name
 * that seq. Checked before a commit is written.
 */
export function positionalIdIssues(
  events: readonly { readonly id: string }[],
  firstSeq: number,
): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  events.forEach((event, index) => {
    const position = positionOfEventId(event.id);
    if (position !== undefined && position !== firstSeq) {
      issues.push({
        path: `events.${index}.id`,
        message: `is positional for the commit at seq ${position}, but this commit starts at seq ${firstSeq}: give the drafts positional ids for the tail they are appended to (withPositionalIds)`,
      });
    }
  });
  return issues;
}
