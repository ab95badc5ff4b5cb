import type { Pool } from 'pg';

/** One change of the sink's schema. Versions only grow; an applied migration is never edited (add the next one). */
export type Migration = { readonly version: number; readonly name: string; readonly sql: string };

/** The table that says which migrations a database has. */
export const MIGRATIONS_TABLE = 'flotilla_sink_migrations';

/**
 * The sink's tables (docs/analytics.md describes each column). Everything is derived from the
 * events stream: dropping the database and starting the sink again rebuilds it from the stream's
 * start, as far as the stream's retention still holds it.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'events, commits, conversations, model calls, tool calls',
    sql: `
CREATE TABLE commits (
  stream_seq   bigint PRIMARY KEY,
  commit_id    text NOT NULL,
  tenant       text NOT NULL,
  conversation text NOT NULL,
  first_seq    bigint NOT NULL,
  last_seq     bigint NOT NULL,
  applied_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX commits_conversation ON commits (tenant, conversation, stream_seq);

CREATE TABLE events (
  stream_seq   bigint NOT NULL,
  position     integer NOT NULL,
  seq          bigint NOT NULL,
  tenant       text NOT NULL,
  conversation text NOT NULL,
  id           text NOT NULL,
  type         text NOT NULL,
  source       text NOT NULL,
  "timestamp"  timestamptz NOT NULL,
  commit_id    text NOT NULL,
  event        jsonb NOT NULL,
  PRIMARY KEY (stream_seq, position),
  UNIQUE (tenant, conversation, id)
);
CREATE INDEX events_conversation ON events (tenant, conversation, seq);
CREATE INDEX events_type_time ON events (type, "timestamp");
CREATE INDEX events_time ON events ("timestamp");

CREATE TABLE conversations (
  tenant             text NOT NULL,
  conversation       text NOT NULL,
  status             text NOT NULL,
  title              text,
  tags               text[] NOT NULL DEFAULT '{}',
  created_at         timestamptz,
  updated_at         timestamptz,
  last_seq           bigint NOT NULL,
  last_stream_seq    bigint NOT NULL,
  commits            bigint NOT NULL,
  events             bigint NOT NULL,
  user_messages      bigint NOT NULL,
  agent_messages     bigint NOT NULL,
  actions            bigint NOT NULL,
  observations       bigint NOT NULL,
  agent_errors       bigint NOT NULL,
  rejections         bigint NOT NULL,
  condensations      bigint NOT NULL,
  llm_calls          bigint NOT NULL,
  prompt_tokens      bigint NOT NULL,
  completion_tokens  bigint NOT NULL,
  cache_read_tokens  bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  reasoning_tokens   bigint NOT NULL,
  cost_usd           double precision NOT NULL,
  model              text,
  template           text,
  last_error_code    text,
  last_error_detail  text,
  snapshot           jsonb NOT NULL,
  PRIMARY KEY (tenant, conversation)
);
CREATE INDEX conversations_status ON conversations (status, updated_at);

CREATE TABLE model_calls (
  stream_seq         bigint NOT NULL,
  position           integer NOT NULL,
  tenant             text NOT NULL,
  conversation       text NOT NULL,
  event_id           text NOT NULL,
  seq                bigint NOT NULL,
  "timestamp"        timestamptz NOT NULL,
  model              text NOT NULL,
  purpose            text NOT NULL,
  response_id        text,
  prompt_tokens      bigint NOT NULL,
  completion_tokens  bigint NOT NULL,
  cache_read_tokens  bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  reasoning_tokens   bigint NOT NULL,
  latency_ms         double precision NOT NULL,
  cost_usd           double precision NOT NULL,
  PRIMARY KEY (stream_seq, position)
);
CREATE INDEX model_calls_tenant_time ON model_calls (tenant, "timestamp");
CREATE INDEX model_calls_conversation ON model_calls (tenant, conversation, seq);

CREATE TABLE tool_calls (
  tenant          text NOT NULL,
  conversation    text NOT NULL,
  action_id       text NOT NULL,
  action_seq      bigint NOT NULL,
  tool_call_id    text NOT NULL,
  tool_name       text NOT NULL,
  response_id     text NOT NULL,
  security_risk   text NOT NULL,
  requested_at    timestamptz NOT NULL,
  started_at      timestamptz,
  runner          text,
  finished_at     timestamptz,
  result_seq      bigint,
  result_type     text,
  outcome         text CHECK (outcome IN ('ok', 'error', 'agent_error', 'rejected')),
  error           text,
  duration_ms     double precision GENERATED ALWAYS AS (extract(epoch FROM finished_at - started_at) * 1000) STORED,
  PRIMARY KEY (tenant, conversation, action_id)
);
CREATE INDEX tool_calls_tool_time ON tool_calls (tool_name, requested_at);
CREATE INDEX tool_calls_call ON tool_calls (tenant, conversation, tool_call_id);

CREATE TABLE invalid_messages (
  stream_seq bigint PRIMARY KEY,
  subject    text NOT NULL,
  reason     text NOT NULL,
  seen_at    timestamptz NOT NULL DEFAULT now()
);
`,
  },
  {
    version: 2,
    name: 'deleted conversations',
    sql: `
CREATE TABLE deletions (
  tenant            text NOT NULL,
  conversation      text NOT NULL,
  up_to_stream_seq  bigint NOT NULL,
  reason            text NOT NULL,
  deleted_at        timestamptz NOT NULL,
  rows_dropped      boolean NOT NULL,
  PRIMARY KEY (tenant, conversation, up_to_stream_seq)
);
`,
  },
];

/** Any key will do, as long as it is the sink's alone: migrations of several sinks starting at once wait for one another. */
const MIGRATION_LOCK = 0x666c6f74; // "flot"

/**
 * Brings the database to the newest schema: each missing migration in its own transaction, under
 * an advisory lock so that sinks starting together apply each once. Returns the versions applied.
 * A database with a version this build does not know was written by a newer sink: refused.
 */
export async function migrate(pool: Pool, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const client = await pool.connect();
  const onError = (): void => undefined; // the query in progress fails with it
  client.on('error', onError);
  try {
    const applied: number[] = [];
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${MIGRATIONS_TABLE} ORDER BY version`,
      );
      const have = new Set(rows.map((row) => row.version));
      const newest = Math.max(0, ...migrations.map((migration) => migration.version));
      const unknown = [...have].filter((version) => version > newest);
      if (unknown.length > 0)
        throw new Error(
          `the database has sink schema version ${Math.max(...unknown)}, newer than this sink's ${newest}: run a newer pg-sink`,
        );
      for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
        if (have.has(migration.version)) continue;
        await client.query('BEGIN');
        try {
          await client.query(migration.sql);
          await client.query(`INSERT INTO ${MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)`, [
            migration.version,
            migration.name,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw new Error(
            `sink migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}`,
            { cause: error },
          );
        }
        applied.push(migration.version);
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    }
    return applied;
  } finally {
    client.off('error', onError);
    client.release(true);
  }
}
