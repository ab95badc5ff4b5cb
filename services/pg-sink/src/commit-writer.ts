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
  /** Its conversation was deleted (a notice covers it) and its rows dropped: not written. */
  | { readonly kind: 'deleted' }
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
  /**
   * Transactions written at once (default 2), each on a connection of its own. Each is a lane:
   * a conversation's commits always take the same lane, in the order they were given.
   */
  readonly transactions?: number;
  /** The most commits one transaction writes (default 64). */
  readonly maxBatch?: number;
  /** A deleted conversation's rows are dropped, and a commit of it that comes late is not written (default: kept). */
  readonly dropDeleted?: boolean;
};

/** A conversation's deletion, as the sink records it (libs/runtime DeletionNotice). */
export type Deletion = {
  readonly tenant: string;
  readonly conversation: string;
  readonly upToStreamSeq: number;
  readonly reason: string;
  readonly at: string;
};

type Queued = {
  readonly commit: StoredCommit;
  readonly resolve: (outcome: WriteOutcome) => void;
  readonly reject: (error: unknown) => void;
};
type Lane = { readonly queue: Queued[]; running: boolean };
type ConversationState = { snapshot: ConversationSnapshot; model: string | null; changed: boolean };

/**
 * Writes commits into the sink's tables: their stream positions, their events, each
 * conversation's row (folded with libs/state's applyCommit from the snapshot the row keeps), its
 * model calls and the tool calls a commit opens or answers. Commits given while a transaction is
 * under way are written together in the next one (group commit: a backlog drains in few round
 * trips, a lone commit is written at once); `write` resolves only after the transaction that
 * holds the commit committed, so the caller acknowledges it after that. Idempotent: a commit
 * whose stream position is recorded changes nothing; an event id seen before is not inserted
 * twice. Commits of one conversation are written in order (one lane per conversation, a
 * per-conversation lock across instances, taken in one order so two instances never deadlock,
 * and the fold's own order check).
 */
export class CommitWriter {
  readonly #lanes: Lane[];
  readonly #maxBatch: number;

  constructor(
    readonly pool: Pool,
    readonly options: CommitWriterOptions,
  ) {
    this.#lanes = Array.from({ length: options.transactions ?? 2 }, () => ({ queue: [], running: false }));
    this.#maxBatch = options.maxBatch ?? 64;
  }

  write(commit: StoredCommit): Promise<WriteOutcome> {
    const lane = this.#lanes[laneOf(`${commit.tenant}/${commit.conversation}`, this.#lanes.length)]!;
    return new Promise((resolve, reject) => {
      lane.queue.push({ commit, resolve, reject });
      void this.#drain(lane);
    });
  }

  /**
   * Records a conversation's deletion and, with `dropDeleted`, removes its rows up to the notice's
   * stream sequence (its conversation row only when that row is of the deleted log, not of one
   * created again since), under the conversation's lock, so a commit being written meanwhile is
   * either removed with the rest or, coming after, finds the deletion and is not written.
   */
  async recordDeletion(deletion: Deletion): Promise<void> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `${deletion.tenant}/${deletion.conversation}`,
      ]);
      const drop = this.options.dropDeleted === true;
      const ref = [deletion.tenant, deletion.conversation, deletion.upToStreamSeq];
      await client.query(
        'INSERT INTO deletions (tenant, conversation, up_to_stream_seq, reason, deleted_at, rows_dropped) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
        [...ref, pgText(deletion.reason), deletion.at, drop],
      );
      if (drop) {
        const owned = await client.query(
          'DELETE FROM conversations WHERE tenant = $1 AND conversation = $2 AND last_stream_seq <= $3 RETURNING 1',
          ref,
        );
        if ((owned.rowCount ?? 0) > 0)
          await client.query('DELETE FROM tool_calls WHERE tenant = $1 AND conversation = $2', ref.slice(0, 2));
        for (const table of ['events', 'model_calls', 'commits'])
          await client.query(`DELETE FROM ${table} WHERE tenant = $1 AND conversation = $2 AND stream_seq <= $3`, ref);
      }
      await client.query('COMMIT');
    } catch (error) {
      failure = error as Error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release(failure !== undefined && isConnectionError(failure) ? failure : undefined);
    }
  }

  /** Records a message of the stream that is not a valid commit (reported, never an event). */
  async recordInvalid(streamSeq: number, subject: string, reason: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO invalid_messages (stream_seq, subject, reason) VALUES ($1, $2, $3) ON CONFLICT (stream_seq) DO NOTHING',
      [streamSeq, pgText(subject), pgText(reason)],
    );
  }

  async #drain(lane: Lane): Promise<void> {
    if (lane.running) return;
    lane.running = true;
    try {
      while (lane.queue.length > 0) await this.#writeBatch(lane.queue.splice(0, this.#maxBatch));
    } finally {
      lane.running = false;
    }
  }

  async #writeBatch(batch: readonly Queued[]): Promise<void> {
    try {
      const outcomes = await this.#transaction(batch.map((queued) => queued.commit));
      batch.forEach((queued, index) => queued.resolve(outcomes[index]!));
    } catch (error) {
      if (batch.length === 1 || isConnectionError(error as Error)) {
        for (const queued of batch) queued.reject(error);
        return;
      }
      // a commit the database refuses fails alone, not the others written with it
      for (const queued of batch) {
        await this.#transaction([queued.commit]).then((outcomes) => queued.resolve(outcomes[0]!), queued.reject);
      }
    }
  }

  /** One transaction writing `commits` (in their order); what it did with each. */
  async #transaction(commits: readonly StoredCommit[]): Promise<WriteOutcome[]> {
    const client = await this.pool.connect();
    let failure: Error | undefined;
    // the server going away between two queries: the next query fails, and this connection is dropped
    const onError = (error: Error): void => void (failure ??= error);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const outcomes = await this.#write(client, commits);
      await client.query(outcomes.some((outcome) => outcome.kind === 'written') ? 'COMMIT' : 'ROLLBACK');
      return outcomes;
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

  async #write(client: PoolClient, commits: readonly StoredCommit[]): Promise<WriteOutcome[]> {
    const keys = [...new Set(commits.map((commit) => `${commit.tenant}/${commit.conversation}`))];
    // every conversation's lock at once, in the order of the locks' keys: two sinks never wait on each other in a cycle
    await client.query(
      'SELECT pg_advisory_xact_lock(l.key) FROM (SELECT DISTINCT hashtextextended(k, 0) AS key FROM unnest($1::text[]) AS k) AS l ORDER BY l.key',
      [keys],
    );
    const recorded = await client.query<{ stream_seq: string | number }>(
      'SELECT stream_seq FROM commits WHERE stream_seq = ANY($1::bigint[])',
      [commits.map((commit) => commit.streamSeq)],
    );
    const seen = new Set(recorded.rows.map((row) => Number(row.stream_seq)));
    const refs = keys.map((key) => commits.find((commit) => `${commit.tenant}/${commit.conversation}` === key)!);
    const { rows } = await client.query<{
      tenant: string;
      conversation: string;
      snapshot: ConversationSnapshot;
      model: string | null;
    }>(
      'SELECT c.tenant, c.conversation, c.snapshot, c.model FROM conversations c JOIN unnest($1::text[], $2::text[]) AS r(tenant, conversation) USING (tenant, conversation)',
      [refs.map((commit) => commit.tenant), refs.map((commit) => commit.conversation)],
    );
    const states = new Map<string, ConversationState>(
      rows.map((row) => [
        `${row.tenant}/${row.conversation}`,
        { snapshot: row.snapshot, model: row.model, changed: false },
      ]),
    );
    const deletedUpTo = this.options.dropDeleted
      ? await deletedUpToOf(
          client,
          refs.filter((ref) => !states.has(`${ref.tenant}/${ref.conversation}`)),
        )
      : new Map<string, number>();

    const outcomes: WriteOutcome[] = [];
    const written: StoredCommit[] = [];
    for (const commit of commits) {
      if (seen.has(commit.streamSeq)) {
        outcomes.push({ kind: 'duplicate' });
        continue;
      }
      const key = `${commit.tenant}/${commit.conversation}`;
      if (commit.streamSeq <= (deletedUpTo.get(key) ?? 0)) {
        outcomes.push({ kind: 'deleted' });
        continue;
      }
      const state = states.get(key) ?? {
        snapshot: initialSnapshot({ tenant: commit.tenant, conversation: commit.conversation }),
        model: null,
        changed: false,
      };
      const snapshot = await this.#fold(state.snapshot, commit);
      if ('expectedSeq' in snapshot) {
        outcomes.push({ kind: 'out_of_order', expectedSeq: snapshot.expectedSeq });
        continue;
      }
      const lastUsage = commit.events.findLast((event) => event.type === 'llm_usage');
      states.set(key, {
        snapshot,
        model: lastUsage?.model ?? state.model ?? snapshot.agent_spec?.model ?? null,
        changed: true,
      });
      seen.add(commit.streamSeq);
      written.push(commit);
      outcomes.push({ kind: 'written' });
    }
    if (written.length === 0) return outcomes;

    const commitRows = written.map((commit) => ({
      stream_seq: commit.streamSeq,
      commit_id: commit.id,
      tenant: commit.tenant,
      conversation: commit.conversation,
      first_seq: commit.firstSeq,
      last_seq: commit.lastSeq,
      events: commit.events,
    }));
    await client.query(INSERT_COMMITS_EVENTS_AND_MODEL_CALLS, [pgJson(commitRows)]);
    await writeToolCalls(client, written);
    const changed = [...states.values()].filter((state) => state.changed);
    await client.query(
      upsertConversations(changed.length),
      changed.flatMap((state) => conversationValues(state.snapshot, state.model)),
    );
    return outcomes;
  }

  /** The conversation's snapshot with the commit folded in, or the seq it waits for. */
  async #fold(
    start: ConversationSnapshot,
    commit: StoredCommit,
  ): Promise<ConversationSnapshot | { expectedSeq: number }> {
    try {
      return applyCommit(start, commit);
    } catch (error) {
      if (!(error instanceof CommitOrderError)) throw error;
      const ref = { tenant: commit.tenant, conversation: commit.conversation };
      // an earlier commit still on its way, unless the stream holds nothing earlier of this conversation
      if ((await this.options.firstCommitSeq(ref)) !== commit.streamSeq) return { expectedSeq: error.expectedFirstSeq };
      const restarted = commit.firstSeq <= start.last_seq;
      this.options.onRestart?.(
        ref,
        commit,
        restarted
          ? 'the log starts again (deleted and created again)'
          : `events ${start.last_seq + 1}..${commit.firstSeq - 1} are no longer in the stream (retention)`,
      );
      const base = restarted ? initialSnapshot(ref) : start;
      return applyCommit({ ...base, last_seq: commit.firstSeq - 1 }, commit);
    }
  }
}

/** For conversations the sink holds no row of: the newest deletion dropped of each, by `tenant/conversation`. */
async function deletedUpToOf(
  client: PoolClient,
  refs: readonly { readonly tenant: string; readonly conversation: string }[],
): Promise<Map<string, number>> {
  if (refs.length === 0) return new Map();
  const { rows } = await client.query<{ tenant: string; conversation: string; up_to: string | number }>(
    'SELECT d.tenant, d.conversation, max(d.up_to_stream_seq) AS up_to FROM deletions d JOIN unnest($1::text[], $2::text[]) AS r(tenant, conversation) USING (tenant, conversation) WHERE d.rows_dropped GROUP BY d.tenant, d.conversation',
    [refs.map((ref) => ref.tenant), refs.map((ref) => ref.conversation)],
  );
  return new Map(rows.map((row) => [`${row.tenant}/${row.conversation}`, Number(row.up_to)]));
}

/** The lane of a conversation: a stable hash of its key (FNV-1a). */
function laneOf(key: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < key.length; index += 1) hash = Math.imul(hash ^ key.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % lanes;
}

// one round trip for the commits' positions, their events and their model calls (all from the same JSON array)
const INSERT_COMMITS_EVENTS_AND_MODEL_CALLS = `
WITH c AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS c(stream_seq bigint, commit_id text, tenant text, conversation text, first_seq bigint, last_seq bigint, events jsonb)
), inserted_commits AS (
  INSERT INTO commits (stream_seq, commit_id, tenant, conversation, first_seq, last_seq)
  SELECT stream_seq, commit_id, tenant, conversation, first_seq, last_seq FROM c
  ON CONFLICT (stream_seq) DO NOTHING
  RETURNING 1
), e AS (
  SELECT c.stream_seq, c.tenant, c.conversation, c.commit_id, (t.n - 1)::integer AS position, t.event
  FROM c, jsonb_array_elements(c.events) WITH ORDINALITY AS t(event, n)
), inserted_events AS (
  INSERT INTO events (stream_seq, position, seq, tenant, conversation, id, type, source, "timestamp", commit_id, event)
  SELECT stream_seq, position, (event->>'seq')::bigint, tenant, conversation, event->>'id', event->>'type', event->>'source', (event->>'timestamp')::timestamptz, commit_id, event FROM e
  ON CONFLICT DO NOTHING
  RETURNING 1
), inserted_model_calls AS (
  INSERT INTO model_calls (stream_seq, position, tenant, conversation, event_id, seq, "timestamp", model, purpose, response_id,
    prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms, cost_usd)
  SELECT stream_seq, position, tenant, conversation, event->>'id', (event->>'seq')::bigint, (event->>'timestamp')::timestamptz, event->>'model', event->>'purpose', event->>'response_id',
    (event->>'prompt_tokens')::bigint, (event->>'completion_tokens')::bigint, (event->>'cache_read_tokens')::bigint, (event->>'cache_write_tokens')::bigint,
    (event->>'reasoning_tokens')::bigint, (event->>'latency_ms')::double precision, (event->>'cost_usd')::double precision
  FROM e WHERE event->>'type' = 'llm_usage'
  ON CONFLICT DO NOTHING
  RETURNING 1
)
SELECT (SELECT count(*) FROM inserted_commits) AS commits, (SELECT count(*) FROM inserted_events) AS events, (SELECT count(*) FROM inserted_model_calls) AS model_calls`;

const INSERT_ACTIONS = `
INSERT INTO tool_calls (tenant, conversation, action_id, action_seq, tool_call_id, tool_name, response_id, security_risk, requested_at)
SELECT a.tenant, a.conversation, a.id, a.seq, a.tool_call_id, a.tool_name, a.response_id, a.security_risk, a.at
FROM jsonb_to_recordset($1::jsonb) AS a(tenant text, conversation text, id text, seq bigint, tool_call_id text, tool_name text, response_id text, security_risk text, at timestamptz)
ON CONFLICT DO NOTHING`;

// of several starts of one call, the first (in the log's order) counts
const RECORD_STARTS = `
UPDATE tool_calls t SET started_at = s.at, runner = s.runner
FROM (
  SELECT DISTINCT ON (s.tenant, s.conversation, s.action_id) s.* FROM jsonb_to_recordset($1::jsonb) AS s(n integer, tenant text, conversation text, action_id text, at timestamptz, runner text)
  ORDER BY s.tenant, s.conversation, s.action_id, s.n
) s
WHERE t.tenant = s.tenant AND t.conversation = s.conversation AND t.action_id = s.action_id AND t.started_at IS NULL`;

// an agent_error may answer a call by its tool_call_id alone (a call that could not be understood); of several answers to one call, the first counts
const RECORD_RESULTS = `
UPDATE tool_calls t SET finished_at = r.at, result_seq = r.seq, result_type = r.type, outcome = r.outcome, error = r.error
FROM (
  SELECT DISTINCT ON (c.tenant, c.conversation, c.action_id) c.action_id AS call, r.*
  FROM jsonb_to_recordset($1::jsonb) AS r(n integer, tenant text, conversation text, action_id text, tool_call_id text, at timestamptz, seq bigint, type text, outcome text, error text)
  JOIN tool_calls c ON c.tenant = r.tenant AND c.conversation = r.conversation AND c.outcome IS NULL
    AND (c.action_id = r.action_id OR (r.action_id IS NULL AND c.tool_call_id = r.tool_call_id))
  ORDER BY c.tenant, c.conversation, c.action_id, r.n
) r
WHERE t.tenant = r.tenant AND t.conversation = r.conversation AND t.action_id = r.call`;

type ToolResult = {
  n: number;
  tenant: string;
  conversation: string;
  action_id: string | null;
  tool_call_id: string;
  at: string;
  seq: number;
  type: string;
  outcome: 'ok' | 'error' | 'agent_error' | 'rejected';
  error: string | null;
};

/** The tool calls the commits open (actions), start (execution_started) and answer (observation, agent_error, user_rejection), in that order. */
async function writeToolCalls(client: PoolClient, commits: readonly StoredCommit[]): Promise<void> {
  const actions: object[] = [];
  const starts: object[] = [];
  const results: ToolResult[] = [];
  for (const { tenant, conversation, events } of commits) {
    for (const event of events as readonly Event[]) {
      switch (event.type) {
        case 'action':
          actions.push({
            tenant,
            conversation,
            id: event.id,
            seq: event.seq,
            tool_call_id: event.tool_call_id,
            tool_name: event.tool_name,
            response_id: event.response_id,
            security_risk: event.security_risk,
            at: event.timestamp,
          });
          break;
        case 'execution_started':
          for (const actionId of event.action_ids)
            starts.push({
              n: starts.length,
              tenant,
              conversation,
              action_id: actionId,
              at: event.timestamp,
              runner: event.runner,
            });
          break;
        case 'observation':
          results.push({
            n: results.length,
            tenant,
            conversation,
            action_id: event.action_id,
            tool_call_id: event.tool_call_id,
            at: event.timestamp,
            seq: event.seq,
            type: event.type,
            outcome: event.is_error ? 'error' : 'ok',
            error: null,
          });
          break;
        case 'agent_error':
          if (event.tool_call_id !== undefined)
            results.push({
              n: results.length,
              tenant,
              conversation,
              action_id: event.action_id ?? null,
              tool_call_id: event.tool_call_id,
              at: event.timestamp,
              seq: event.seq,
              type: event.type,
              outcome: 'agent_error',
              error: event.error,
            });
          break;
        case 'user_rejection':
          results.push({
            n: results.length,
            tenant,
            conversation,
            action_id: event.action_id,
            tool_call_id: event.tool_call_id,
            at: event.timestamp,
            seq: event.seq,
            type: event.type,
            outcome: 'rejected',
            error: event.reason,
          });
          break;
        default:
          break;
      }
    }
  }
  if (actions.length > 0) await client.query(INSERT_ACTIONS, [pgJson(actions)]);
  if (starts.length > 0) await client.query(RECORD_STARTS, [pgJson(starts)]);
  if (results.length > 0) await client.query(RECORD_RESULTS, [pgJson(results)]);
}

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
function upsertConversations(count: number): string {
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
  if (typeof code === 'string' && /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH)$/.test(code))
    return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}
