import { readFile } from 'node:fs/promises';
import { draftEvent, type EventDraft, type EventSource } from '@flotilla/events';
import { placeEvents, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommitWriter } from './commit-writer.js';
import { migrate } from './migrations.js';
import { createTestDatabase, type TestDatabase } from './test-support/index.js';

// The documented queries (services/pg-sink/queries, docs/analytics.md), each run against a
// database the sink wrote from known commits, with the figures worked out by hand.

const query = async (name: string, parameters: unknown[] = []): Promise<Record<string, unknown>[]> =>
  (await database.pool.query(await readFile(new URL(`../queries/${name}.sql`, import.meta.url), 'utf8'), parameters))
    .rows;

let database: TestDatabase;
let streamSeq = 0;
const tails = new Map<string, number>();

const acme1 = { tenant: 'acme', conversation: 'c1' };
const acme2 = { tenant: 'acme', conversation: 'c2' };
const globex1 = { tenant: 'globex', conversation: 'g1' };

/** Drafts of one conversation, each at its own time. */
type Step = {
  source: EventSource;
  at: string;
  draft: (context: { tenant: string; conversation: string; source: EventSource; now: () => Date }) => EventDraft;
};

function commit(ref: ConversationRef, steps: readonly Step[]): StoredCommit {
  const key = `${ref.tenant}/${ref.conversation}`;
  const lastSeq = tails.get(key) ?? 0;
  const events = placeEvents(
    ref,
    steps.map((step) => step.draft({ ...ref, source: step.source, now: () => new Date(step.at) })),
    lastSeq,
  );
  tails.set(key, lastSeq + events.length);
  streamSeq += 1;
  return {
    streamSeq,
    id: `commit-${streamSeq}`,
    ...ref,
    firstSeq: lastSeq + 1,
    lastSeq: lastSeq + events.length,
    events,
  };
}

const usage = (
  at: string,
  model: string,
  purpose: 'step' | 'condensation',
  latency: number,
  cost: number,
  prompt: number,
  completion: number,
): Step => ({
  source: 'agent',
  at,
  draft: (context) =>
    draftEvent(context, 'llm_usage', {
      model,
      purpose,
      prompt_tokens: prompt,
      completion_tokens: completion,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: latency,
      cost_usd: cost,
    }),
});
const action = (at: string, id: string, tool: string): Step => ({
  source: 'agent',
  at,
  draft: (context) =>
    draftEvent(context, 'action', {
      id,
      tool_call_id: `call-${id}`,
      tool_name: tool,
      arguments: '{}',
      input: {},
      thought: [],
      response_id: `r-${id}`,
      security_risk: 'low',
    }),
});
const status = (at: string, value: 'running' | 'finished' | 'error'): Step => ({
  source: 'system',
  at,
  draft: (context) => draftEvent(context, 'state_change', { status: value }),
});

beforeAll(async () => {
  database = await createTestDatabase();
  await migrate(database.pool);
  const ids = new Map<string, string>();
  const idOf = (commitValue: StoredCommit, index: number): string => commitValue.events[index]!.id;
  const writes: StoredCommit[] = [];
  // acme c1, 1 January: two steps on brain, three terminal calls (ok, error, agent_error), finished
  writes.push(
    commit(acme1, [
      status('2026-01-01T10:00:00Z', 'running'),
      usage('2026-01-01T10:00:01Z', 'brain', 'step', 100, 0.125, 10, 2),
      action('2026-01-01T10:00:01Z', 'a1', 'terminal'),
      action('2026-01-01T10:00:01Z', 'a2', 'terminal'),
      action('2026-01-01T10:00:01Z', 'a3', 'terminal'),
    ]),
  );
  for (const index of [2, 3, 4]) ids.set(`a${index - 1}`, idOf(writes[0]!, index));
  const result = (id: string, isError: boolean): Step => ({
    source: 'environment',
    at: '2026-01-01T10:00:02Z',
    draft: (context) =>
      draftEvent(context, 'observation', {
        action_id: ids.get(id)!,
        tool_call_id: `call-${id}`,
        tool_name: 'terminal',
        content: [],
        is_error: isError,
      }),
  });
  writes.push(
    commit(acme1, [
      result('a1', false),
      result('a2', true),
      {
        source: 'environment',
        at: '2026-01-01T10:00:02Z',
        draft: (context) =>
          draftEvent(context, 'agent_error', {
            action_id: ids.get('a3')!,
            tool_call_id: 'call-a3',
            tool_name: 'terminal',
            error: 'tool failed',
          }),
      },
    ]),
  );
  writes.push(
    commit(acme1, [
      usage('2026-01-01T10:00:03Z', 'brain', 'step', 300, 0.25, 20, 4),
      status('2026-01-01T10:00:03Z', 'finished'),
    ]),
  );
  // acme c2, 2 January: a step on fast, a condensation on brain, a rejected file edit, an error
  writes.push(
    commit(acme2, [
      status('2026-01-02T09:00:00Z', 'running'),
      usage('2026-01-02T09:00:01Z', 'fast', 'step', 50, 0.0625, 5, 1),
      action('2026-01-02T09:00:01Z', 'b1', 'file_editor'),
    ]),
  );
  const b1 = idOf(writes[3]!, 2);
  writes.push(
    commit(acme2, [
      {
        source: 'user',
        at: '2026-01-02T09:00:02Z',
        draft: (context) =>
          draftEvent(context, 'user_rejection', {
            action_id: b1,
            tool_call_id: 'call-b1',
            tool_name: 'file_editor',
            reason: 'no',
            rejection_source: 'user',
          }),
      },
      usage('2026-01-02T09:00:03Z', 'brain', 'condensation', 1_000, 1, 100, 10),
      {
        source: 'system',
        at: '2026-01-02T09:00:04Z',
        draft: (context) =>
          draftEvent(context, 'conversation_error', { code: 'max_iterations', detail: 'the run reached 1 iteration' }),
      },
      status('2026-01-02T09:00:04Z', 'error'),
    ]),
  );
  // globex g1, 1 January: one step on brain, one terminal call never answered, still running long after
  writes.push(
    commit(globex1, [
      status('2026-01-01T12:00:00Z', 'running'),
      usage('2026-01-01T12:00:01Z', 'brain', 'step', 200, 0.5, 30, 6),
      action('2026-01-01T12:00:01Z', 'g1', 'terminal'),
    ]),
  );
  const writer = new CommitWriter(database.pool, { firstCommitSeq: () => Promise.resolve(undefined) });
  for (const write of writes) expect(await writer.write(write)).toEqual({ kind: 'written' });
});

afterAll(async () => {
  await database?.[Symbol.asyncDispose]();
});

describe('the documented queries', () => {
  it('cost and tokens per tenant, model and day', async () => {
    const rows = (await query('cost-by-tenant-model-day')).map((row) => ({
      tenant: row['tenant'],
      model: row['model'],
      day: (row['day'] as Date).toISOString().slice(0, 10),
      calls: row['calls'],
      // sums of bigint columns are numeric: strings in JavaScript
      prompt_tokens: Number(row['prompt_tokens']),
      completion_tokens: Number(row['completion_tokens']),
      cost_usd: row['cost_usd'],
    }));
    expect(rows).toEqual([
      {
        tenant: 'acme',
        model: 'brain',
        day: '2026-01-01',
        calls: 2,
        prompt_tokens: 30,
        completion_tokens: 6,
        cost_usd: 0.375,
      },
      {
        tenant: 'globex',
        model: 'brain',
        day: '2026-01-01',
        calls: 1,
        prompt_tokens: 30,
        completion_tokens: 6,
        cost_usd: 0.5,
      },
      {
        tenant: 'acme',
        model: 'brain',
        day: '2026-01-02',
        calls: 1,
        prompt_tokens: 100,
        completion_tokens: 10,
        cost_usd: 1,
      },
      {
        tenant: 'acme',
        model: 'fast',
        day: '2026-01-02',
        calls: 1,
        prompt_tokens: 5,
        completion_tokens: 1,
        cost_usd: 0.0625,
      },
    ]);
  });

  it('tool failure rates', async () => {
    expect(await query('tool-failure-rates')).toEqual([
      { tool_name: 'terminal', calls: 4, ok: 1, failed: 2, rejected: 0, unanswered: 1, failure_rate: '0.6667' },
      { tool_name: 'file_editor', calls: 1, ok: 0, failed: 0, rejected: 1, unanswered: 0, failure_rate: '0.0000' },
    ]);
  });

  it('step latency percentiles (condensations are not steps)', async () => {
    expect(await query('step-latency-percentiles')).toEqual([
      // 100, 200, 300 ms: p90 = 200 + 0.8 × 100
      { model: 'brain', steps: 3, p50_ms: 200, p90_ms: 280, p99_ms: 298, max_ms: 300 },
      { model: 'fast', steps: 1, p50_ms: 50, p90_ms: 50, p99_ms: 50, max_ms: 50 },
    ]);
  });

  it('conversations stuck or errored', async () => {
    const rows = await query('conversations-stuck-or-errored', ['15 minutes']);
    expect(
      rows.map(({ tenant, conversation, status: value, last_error_code }) => ({
        tenant,
        conversation,
        status: value,
        last_error_code,
      })),
    ).toEqual([
      { tenant: 'acme', conversation: 'c2', status: 'error', last_error_code: 'max_iterations' },
      { tenant: 'globex', conversation: 'g1', status: 'running', last_error_code: null },
    ]);
  });

  it('the full trail of one conversation', async () => {
    const rows = await query('conversation-trail', ['acme', 'c1']);
    expect(rows.map((row) => [row['seq'], row['type'], row['source'], row['stream_seq'], row['position']])).toEqual([
      [1, 'state_change', 'system', 1, 0],
      [2, 'llm_usage', 'agent', 1, 1],
      [3, 'action', 'agent', 1, 2],
      [4, 'action', 'agent', 1, 3],
      [5, 'action', 'agent', 1, 4],
      [6, 'observation', 'environment', 2, 0],
      [7, 'observation', 'environment', 2, 1],
      [8, 'agent_error', 'environment', 2, 2],
      [9, 'llm_usage', 'agent', 3, 0],
      [10, 'state_change', 'system', 3, 1],
    ]);
    expect((rows[7]!['event'] as { error: string }).error).toBe('tool failed');
  });
});
