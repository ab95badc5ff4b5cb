import type { Event } from '@flotilla/events';
import type { StoredCommit } from '@flotilla/log';
import type { PoolClient } from 'pg';
import { pgJson } from './pg-text.js';

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
export async function writeToolCalls(client: PoolClient, commits: readonly StoredCommit[]): Promise<void> {
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
