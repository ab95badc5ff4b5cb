import type { ConversationSnapshot } from '@flotilla/state';
import { pgJson, pgText } from './pg-text.js';

/** The columns of a conversation's row, in the order upsertConversations numbers its values. */
const CONVERSATION_COLUMNS = [
  'tenant',
  'conversation',
  'status',
  'title',
  'tags',
  'created_at',
  'updated_at',
  'last_seq',
  'last_stream_seq',
  'commits',
  'events',
  'user_messages',
  'agent_messages',
  'actions',
  'observations',
  'agent_errors',
  'rejections',
  'condensations',
  'llm_calls',
  'prompt_tokens',
  'completion_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'cost_usd',
  'model',
  'template',
  'last_error_code',
  'last_error_detail',
  'snapshot',
] as const;

/** The upsert of `count` conversations' rows (conversationValues of each, one after the other). */
export function upsertConversations(count: number): string {
  const rows = Array.from(
    { length: count },
    (_, row) =>
      `(${CONVERSATION_COLUMNS.map((_, column) => `$${row * CONVERSATION_COLUMNS.length + column + 1}`).join(', ')})`,
  );
  return `INSERT INTO conversations (${CONVERSATION_COLUMNS.join(', ')}) VALUES ${rows.join(', ')}
ON CONFLICT (tenant, conversation) DO UPDATE SET ${CONVERSATION_COLUMNS.slice(2)
    .map((column) => `${column} = EXCLUDED.${column}`)
    .join(', ')}`;
}

/** The values of a conversation's row, in the order of CONVERSATION_COLUMNS (as upsertConversations numbers them). */
export function conversationValues(snapshot: ConversationSnapshot, model: string | null): unknown[] {
  const { counters, usage } = snapshot;
  const values: Record<(typeof CONVERSATION_COLUMNS)[number], unknown> = {
    tenant: snapshot.tenant,
    conversation: snapshot.conversation,
    status: snapshot.status,
    title: pgText(snapshot.title),
    tags: snapshot.tags.map((tag) => pgText(tag)),
    created_at: snapshot.created_at,
    updated_at: snapshot.updated_at,
    last_seq: snapshot.last_seq,
    last_stream_seq: snapshot.last_stream_seq,
    commits: snapshot.commits,
    events: counters.events,
    user_messages: counters.user_messages,
    agent_messages: counters.agent_messages,
    actions: counters.actions,
    observations: counters.observations,
    agent_errors: counters.agent_errors,
    rejections: counters.rejections,
    condensations: counters.condensations,
    llm_calls: counters.llm_calls,
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    cache_read_tokens: usage.cache_read_tokens,
    cache_write_tokens: usage.cache_write_tokens,
    reasoning_tokens: usage.reasoning_tokens,
    cost_usd: usage.cost_usd,
    model: pgText(model),
    template: pgText(snapshot.agent_spec?.template),
    last_error_code: pgText(snapshot.last_error?.code),
    last_error_detail: pgText(snapshot.last_error?.detail),
    snapshot: pgJson(snapshot),
  };
  return CONVERSATION_COLUMNS.map((column) => values[column]);
}
