import type { StoredCommit } from '@flotilla/log';
import type { PoolClient } from 'pg';
import { pgJson } from './pg-text.js';

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

/** Inserts the commits' stream positions, their events and their model calls (what is there already is left as it is). */
export async function insertCommits(client: PoolClient, commits: readonly StoredCommit[]): Promise<void> {
  const commitRows = commits.map((commit) => ({
    stream_seq: commit.streamSeq,
    commit_id: commit.id,
    tenant: commit.tenant,
    conversation: commit.conversation,
    first_seq: commit.firstSeq,
    last_seq: commit.lastSeq,
    events: commit.events,
  }));
  await client.query(INSERT_COMMITS_EVENTS_AND_MODEL_CALLS, [pgJson(commitRows)]);
}
