import type { ConversationPage, ListConversationsQuery, QueuedRun } from '@flotilla/api';
import type { ConversationSnapshot } from '@flotilla/state';
import { ApiError } from './api-error.js';
import type { ConversationIndex } from './conversation-index.js';
import { toResource } from './conversation-resource.js';

type Query = {
  status?: ListConversationsQuery['status'];
  sort: NonNullable<ListConversationsQuery['sort']>;
  limit: number;
  cursor?: string;
};

/** Sort key: the timestamp, then the id (unique), so every position is strict. */
const keyOf = (snapshot: ConversationSnapshot, field: 'created_at' | 'updated_at'): string =>
  `${snapshot[field] ?? ''}\u0000${snapshot.conversation}`;

function decodeCursor(text: string, sort: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const cursor = parsed as { s?: unknown; k?: unknown } | undefined;
  if (!cursor || cursor.s !== sort || typeof cursor.k !== 'string') {
    throw new ApiError(400, 'invalid_cursor', 'The cursor is not one this API issued for this sort.');
  }
  return cursor.k;
}

/** A page of the tenant's conversations from the gateway's index, after the cursor's position. */
export function listConversations(
  index: ConversationIndex,
  tenant: string,
  query: Query,
  queued: (conversation: string) => QueuedRun | null = () => null,
): ConversationPage {
  const descending = query.sort.startsWith('-');
  const field = query.sort.replace('-', '') as 'created_at' | 'updated_at';
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor, query.sort);
  const candidates: { key: string; snapshot: ConversationSnapshot }[] = [];
  for (const snapshot of index.list(tenant)) {
    if (query.status && snapshot.status !== query.status) continue;
    const key = keyOf(snapshot, field);
    if (after !== undefined && (descending ? key >= after : key <= after)) continue;
    candidates.push({ key, snapshot });
  }
  candidates.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) * (descending ? -1 : 1));
  const page = candidates.slice(0, query.limit);
  const last = page.at(-1);
  return {
    items: page.map((item) => toResource(item.snapshot, queued(item.snapshot.conversation))),
    next_cursor:
      last && candidates.length > query.limit
        ? Buffer.from(JSON.stringify({ s: query.sort, k: last.key })).toString('base64url')
        : null,
  };
}
