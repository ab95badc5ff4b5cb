import type { Event } from '@flotilla/events';
import type { ConversationRef, StoredCommit } from '@flotilla/log';
import { applyCommit, CommitOrderError, initialSnapshot, type ConversationSnapshot } from '@flotilla/state';
import type { Pool, PoolClient } from 'pg';
import { pgJson, pgText } from './pg-text.js';

/** What writing one commit did. */
export type WriteOutcome =
  /** Its events and derived rows are in the database, with its stream position. */
  | { readonly kind: 'written' }
  /** Its stream position was already recorded: nothing was changed. */
  | { readonly kind: 'duplicate' }
  /** An earlier commit of its conversation is not written yet: try again later (it comes first). */
  | { readonly kind: 'out_of_order'; readonly expectedSeq: number };

export type CommitWriterOptions = {
  /**
   * The stream sequence of the conversation's first commit the stream still holds: a commit that
   * does not continue the conversation's row is written only when it is that one (the log was
   * cut by retention, or deleted and created again).
   */
  readonly firstCommitSeq: (ref: ConversationRef) => Promise<number | undefined>;
  /** Told when a conversation's row starts again from a commit that does not continue it. */
  readonly onRestart?: (ref: ConversationRef, commit: StoredCommit, reason: string) => void;
};

/**
 * Writes commits into the sink's tables, each in ONE transaction: the commit's stream position,
 * its events, the conversation's row (folded with libs/state's applyCommit from the snapshot the
 * row keeps), its model calls and the tool calls it opens or answers. Idempotent: a commit whose
 * stream position is recorded changes nothing; an event id seen before is not inserted twice.
 * Commits of one conversation are written in order (a per-conversation lock and the fold's own
 * order check); the caller acknowledges a commit only after `write` resolved.
 */
export class CommitWriter {
  constructor(
    readonly pool: Pool,
    readonly options: CommitWriterOptions,
  ) {}

  async write(commit: StoredCommit): Promise<WriteOutcome> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    // the server going away between two queries: the next query fails, and this connection is dropped
    const onError = (error: Error): void => void (failure ??= error);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const outcome = await this.#write(client, commit);
      await client.query(outcome.kind === 'written' ? 'COMMIT' : 'ROLLBACK');
      return outcome;
    } catch (error) {
      failure = error as Error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', onError);
      // a connection that failed mid-transaction is not given to the next commit
      client.release(failure !== undefined && isConnectionError(failure) ? failure : undefined);
    }
  }

  /** Records a message of the stream that is not a valid commit (reported, never an event). */
  async recordInvalid(streamSeq: number, subject: string, reason: string): Promise<void> {
    await this.pool.query('INSERT INTO invalid_messages (stream_seq, subject, reason) VALUES ($1, $2, $3) ON CONFLICT (stream_seq) DO NOTHING', [streamSeq, pgText(subject), pgText(reason)]);
  }

  async #write(client: PoolClient, commit: StoredCommit): Promise<WriteOutcome> {
    const { tenant, conversation } = commit;
    const ref = { tenant, conversation };
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${tenant}/${conversation}`]);
    const recorded = await client.query(
      'INSERT INTO commits (stream_seq, commit_id, tenant, conversation, first_seq, last_seq) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (stream_seq) DO NOTHING',
      [commit.streamSeq, commit.id, tenant, conversation, commit.firstSeq, commit.lastSeq],
    );
    if (recorded.rowCount === 0) return { kind: 'duplicate' };
    const { rows } = await client.query<{ snapshot: ConversationSnapshot; model: string | null }>('SELECT snapshot, model FROM conversations WHERE tenant = $1 AND conversation = $2', [tenant, conversation]);
    const row = rows[0];
    const snapshot = await this.#fold(row?.snapshot ?? initialSnapshot(ref), commit);
    if ('expectedSeq' in snapshot) return { kind: 'out_of_order', expectedSeq: snapshot.expectedSeq };

    await client.query(INSERT_EVENTS_AND_MODEL_CALLS, [commit.streamSeq, tenant, conversation, pgJson(commit.events), commit.id]);
    await writeToolCalls(client, ref, commit.events);
    const lastUsage = commit.events.findLast((event) => event.type === 'llm_usage');
    const model = lastUsage?.model ?? row?.model ?? snapshot.agent_spec?.model ?? null;
    await client.query(UPSERT_CONVERSATION, conversationValues(snapshot, model));
    return { kind: 'written' };
  }

  /** The conversation's snapshot with the commit folded in, or the seq it waits for. */
  async #fold(start: ConversationSnapshot, commit: StoredCommit): Promise<ConversationSnapshot | { expectedSeq: number }> {
    try {
      return applyCommit(start, commit);
    } catch (error) {
      if (!(error instanceof CommitOrderError)) throw error;
      const ref = { tenant: commit.tenant, conversation: commit.conversation };
      // an earlier commit still on its way, unless the stream holds nothing earlier of this conversation
      if ((await this.options.firstCommitSeq(ref)) !== commit.streamSeq) return { expectedSeq: error.expectedFirstSeq };
      const restarted = commit.firstSeq <= start.last_seq;
      this.options.onRestart?.(ref, commit, restarted ? 'the log starts again (deleted and created again)' : `events ${start.last_seq + 1}..${commit.firstSeq - 1} are no longer in the stream (retention)`);
      const base = restarted ? initialSnapshot(ref) : start;
      return applyCommit({ ...base, last_seq: commit.firstSeq - 1 }, commit);
    }
  }
}

// one round trip for a commit's events and its model calls (both from the same JSON array)
const INSERT_EVENTS_AND_MODEL_CALLS = `
WITH e AS (
  SELECT (t.n - 1)::integer AS position, t.event FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS t(event, n)
), inserted_events AS (
  INSERT INTO events (stream_seq, position, seq, tenant, conversation, id, type, source, "timestamp", commit_id, event)
  SELECT $1, position, (event->>'seq')::bigint, $2, $3, event->>'id', event->>'type', event->>'source', (event->>'timestamp')::timestamptz, $5, event FROM e
  ON CONFLICT DO NOTHING
  RETURNING 1
), inserted_model_calls AS (
  INSERT INTO model_calls (stream_seq, position, tenant, conversation, event_id, seq, "timestamp", model, purpose, response_id,
    prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms, cost_usd)
  SELECT $1, position, $2, $3, event->>'id', (event->>'seq')::bigint, (event->>'timestamp')::timestamptz, event->>'model', event->>'purpose', event->>'response_id',
    (event->>'prompt_tokens')::bigint, (event->>'completion_tokens')::bigint, (event->>'cache_read_tokens')::bigint, (event->>'cache_write_tokens')::bigint,
    (event->>'reasoning_tokens')::bigint, (event->>'latency_ms')::double precision, (event->>'cost_usd')::double precision
  FROM e WHERE event->>'type' = 'llm_usage'
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM inserted_events) AS events, (SELECT count(*) FROM inserted_model_calls) AS model_calls`;

const INSERT_ACTIONS = `
INSERT INTO tool_calls (tenant, conversation, action_id, action_seq, tool_call_id, tool_name, response_id, security_risk, requested_at)
SELECT $1, $2, a.id, a.seq, a.tool_call_id, a.tool_name, a.response_id, a.security_risk, a.at
FROM jsonb_to_recordset($3::jsonb) AS a(id text, seq bigint, tool_call_id text, tool_name text, response_id text, security_risk text, at timestamptz)
ON CONFLICT DO NOTHING`;

const RECORD_STARTS = `
UPDATE tool_calls t SET started_at = s.at, runner = s.runner
FROM jsonb_to_recordset($3::jsonb) AS s(action_id text, at timestamptz, runner text)
WHERE t.tenant = $1 AND t.conversation = $2 AND t.action_id = s.action_id AND t.started_at IS NULL`;

// an agent_error may answer a call by its tool_call_id alone (a call that could not be understood)
const RECORD_RESULTS = `
UPDATE tool_calls t SET finished_at = r.at, result_seq = r.seq, result_type = r.type, outcome = r.outcome, error = r.error
FROM jsonb_to_recordset($3::jsonb) AS r(action_id text, tool_call_id text, at timestamptz, seq bigint, type text, outcome text, error text)
WHERE t.tenant = $1 AND t.conversation = $2 AND t.outcome IS NULL
  AND (t.action_id = r.action_id OR (r.action_id IS NULL AND t.tool_call_id = r.tool_call_id))`;

type ToolResult = { action_id: string | null; tool_call_id: string; at: string; seq: number; type: string; outcome: 'ok' | 'error' | 'agent_error' | 'rejected'; error: string | null };

/** The tool calls a commit opens (actions), starts (execution_started) and answers (observation, agent_error, user_rejection), in that order. */
async function writeToolCalls(client: PoolClient, ref: ConversationRef, events: readonly Event[]): Promise<void> {
  const actions: object[] = [];
  const starts: object[] = [];
  const results: ToolResult[] = [];
  for (const event of events) {
    switch (event.type) {
      case 'action':
        actions.push({ id: event.id, seq: event.seq, tool_call_id: event.tool_call_id, tool_name: event.tool_name, response_id: event.response_id, security_risk: event.security_risk, at: event.timestamp });
        break;
      case 'execution_started':
        for (const actionId of event.action_ids) starts.push({ action_id: actionId, at: event.timestamp, runner: event.runner });
        break;
      case 'observation':
        results.push({ action_id: event.action_id, tool_call_id: event.tool_call_id, at: event.timestamp, seq: event.seq, type: event.type, outcome: event.is_error ? 'error' : 'ok', error: null });
        break;
      case 'agent_error':
        if (event.tool_call_id !== undefined) results.push({ action_id: event.action_id ?? null, tool_call_id: event.tool_call_id, at: event.timestamp, seq: event.seq, type: event.type, outcome: 'agent_error', error: event.error });
        break;
      case 'user_rejection':
        results.push({ action_id: event.action_id, tool_call_id: event.tool_call_id, at: event.timestamp, seq: event.seq, type: event.type, outcome: 'rejected', error: event.reason });
        break;
      default:
        break;
    }
  }
  if (actions.length > 0) await client.query(INSERT_ACTIONS, [ref.tenant, ref.conversation, pgJson(actions)]);
  if (starts.length > 0) await client.query(RECORD_STARTS, [ref.tenant, ref.conversation, pgJson(starts)]);
  if (results.length > 0) await client.query(RECORD_RESULTS, [ref.tenant, ref.conversation, pgJson(results)]);
}

const CONVERSATION_COLUMNS = [
  'tenant', 'conversation', 'status', 'title', 'tags', 'created_at', 'updated_at', 'last_seq', 'last_stream_seq', 'commits',
  'events', 'user_messages', 'agent_messages', 'actions', 'observations', 'agent_errors', 'rejections', 'condensations', 'llm_calls',
  'prompt_tokens', 'completion_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens', 'cost_usd',
  'model', 'template', 'last_error_code', 'last_error_detail', 'snapshot',
] as const;

const UPSERT_CONVERSATION = `
INSERT INTO conversations (${CONVERSATION_COLUMNS.join(', ')})
VALUES (${CONVERSATION_COLUMNS.map((_, index) => `$${index + 1}`).join(', ')})
ON CONFLICT (tenant, conversation) DO UPDATE SET ${CONVERSATION_COLUMNS.slice(2).map((column) => `${column} = EXCLUDED.${column}`).join(', ')}`;

function conversationValues(snapshot: ConversationSnapshot, model: string | null): unknown[] {
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

/**
 * True for failures of the connection or the server (it went away, is starting or shutting
 * down, refused the connection), after which the commit is simply tried again; SQLSTATE classes
 * 08 (connection), 57P (operator intervention) and 53 (insufficient resources).
 */
export function isConnectionError(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^(08|57P|53)/.test(code)) return true;
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH)$/.test(code)) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(error.message);
}
