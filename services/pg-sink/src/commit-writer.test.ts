import { draftEvent, type EventDraft } from '@flotilla/events';
import { placeEvents, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitWriter } from './commit-writer.js';
import { migrate, MIGRATIONS } from './migrations.js';
import { createTestDatabase, type TestDatabase } from './test-support/index.js';

// The writer against a real PostgreSQL (a fresh database per test): order, idempotency, derived rows.

const ref: ConversationRef = { tenant: 'acme', conversation: 'c1' };
let database: TestDatabase;
let streamSeq = 0;
let tails = new Map<string, number>();

beforeEach(async () => {
  database = await createTestDatabase();
  await migrate(database.pool);
  streamSeq = 0;
  tails = new Map();
});
afterEach(async () => {
  await database[Symbol.asyncDispose]();
});

/** The next commit of `ref` (its events placed after the previous one's), at the next stream position. */
function commitOf(drafts: readonly EventDraft[], at = ref): StoredCommit {
  const key = `${at.tenant}/${at.conversation}`;
  const lastSeq = tails.get(key) ?? 0;
  const events = placeEvents(at, drafts, lastSeq);
  tails.set(key, lastSeq + events.length);
  streamSeq += 1;
  return {
    streamSeq,
    id: `commit-${streamSeq}`,
    ...at,
    firstSeq: lastSeq + 1,
    lastSeq: lastSeq + events.length,
    events,
  };
}

const at =
  (ms: number): (() => Date) =>
  () =>
    new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms));

function writer(firstCommitSeq = 1): CommitWriter {
  return new CommitWriter(database.pool, { firstCommitSeq: () => Promise.resolve(firstCommitSeq) });
}

describe('CommitWriter', () => {
  it('writes events, the conversation, model calls and tool calls, each commit once', async () => {
    const user = { ...ref, source: 'user' as const };
    const agent = { ...ref, source: 'agent' as const };
    const first = commitOf([
      draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text: 'hello \u0000 there' }] }),
      draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'running', title: 'a title' }),
    ]);
    const action = draftEvent({ ...agent, now: at(100) }, 'action', {
      tool_call_id: 'call-1',
      tool_name: 'terminal',
      arguments: '{}',
      input: { command: 'ls' },
      thought: [],
      response_id: 'r1',
      security_risk: 'low',
    });
    const step = commitOf([
      action,
      draftEvent(agent, 'llm_usage', {
        model: 'brain',
        purpose: 'step',
        prompt_tokens: 10,
        completion_tokens: 5,
        cache_read_tokens: 1,
        cache_write_tokens: 0,
        reasoning_tokens: 2,
        latency_ms: 12.5,
        cost_usd: 0.25,
      }),
    ]);
    const actionId = step.events[0]!.id;
    const started = commitOf([
      draftEvent({ ...ref, source: 'environment', now: at(200) }, 'execution_started', {
        action_ids: [actionId],
        runner: 'runner-1',
      }),
    ]);
    const observed = commitOf([
      draftEvent({ ...ref, source: 'environment', now: at(1_450) }, 'observation', {
        action_id: actionId,
        tool_call_id: 'call-1',
        tool_name: 'terminal',
        content: [{ type: 'text', text: 'x' }],
        is_error: true,
      }),
    ]);
    const sink = writer();
    for (const commit of [first, step, started, observed])
      expect(await sink.write(commit)).toEqual({ kind: 'written' });
    // redelivered: nothing changes
    for (const commit of [first, observed]) expect(await sink.write(commit)).toEqual({ kind: 'duplicate' });

    const events = await database.pool.query(
      'SELECT stream_seq, position, seq, id, type, source, event FROM events ORDER BY seq',
    );
    expect(events.rows.map((row) => [row.stream_seq, row.position, row.seq, row.type])).toEqual([
      [1, 0, 1, 'message'],
      [1, 1, 2, 'state_change'],
      [2, 0, 3, 'action'],
      [2, 1, 4, 'llm_usage'],
      [3, 0, 5, 'execution_started'],
      [4, 0, 6, 'observation'],
    ]);
    expect(events.rows[2].event).toEqual(step.events[0]);
    // PostgreSQL cannot hold NUL: it is stored as U+FFFD
    expect(events.rows[0].event.content[0].text).toBe('hello \uFFFD there');

    const conversation = (await database.pool.query('SELECT * FROM conversations')).rows[0];
    expect(conversation).toMatchObject({
      tenant: 'acme',
      conversation: 'c1',
      status: 'running',
      title: 'a title',
      last_seq: 6,
      last_stream_seq: 4,
      commits: 4,
      events: 6,
      actions: 1,
      observations: 1,
      llm_calls: 1,
      prompt_tokens: 10,
      cost_usd: 0.25,
      model: 'brain',
    });
    const model = (await database.pool.query('SELECT * FROM model_calls')).rows;
    expect(model).toMatchObject([
      {
        model: 'brain',
        purpose: 'step',
        prompt_tokens: 10,
        completion_tokens: 5,
        reasoning_tokens: 2,
        latency_ms: 12.5,
        cost_usd: 0.25,
        seq: 4,
      },
    ]);
    const tools = (await database.pool.query('SELECT * FROM tool_calls')).rows;
    expect(tools).toMatchObject([
      {
        action_id: actionId,
        tool_name: 'terminal',
        runner: 'runner-1',
        outcome: 'error',
        result_type: 'observation',
        result_seq: 6,
        duration_ms: 1_250,
      },
    ]);
  });

  it('waits for an earlier commit of the conversation, then writes them in order', async () => {
    const one = commitOf([
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'one' }] }),
    ]);
    const two = commitOf([
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'two' }] }),
    ]);
    const sink = writer(one.streamSeq);
    expect(await sink.write(two)).toEqual({ kind: 'out_of_order', expectedSeq: 1 });
    expect((await database.pool.query('SELECT count(*)::int AS n FROM commits')).rows[0].n).toBe(0);
    expect(await sink.write(one)).toEqual({ kind: 'written' });
    expect(await sink.write(two)).toEqual({ kind: 'written' });
    expect((await database.pool.query('SELECT last_seq FROM conversations')).rows[0].last_seq).toBe(2);
  });

  it('starts a conversation from the first commit the stream still holds (retention), and answers a call by its tool_call_id alone', async () => {
    commitOf([
      draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'gone' }] }),
    ]);
    const kept = commitOf([
      draftEvent({ ...ref, source: 'agent' }, 'action', {
        tool_call_id: 'bad',
        tool_name: 'nope',
        arguments: '{',
        input: null,
        thought: [],
        response_id: 'r1',
        security_risk: 'unknown',
      }),
      draftEvent({ ...ref, source: 'environment' }, 'agent_error', {
        tool_call_id: 'bad',
        tool_name: 'nope',
        error: 'unknown tool nope',
      }),
    ]);
    expect(await writer(kept.streamSeq).write(kept)).toEqual({ kind: 'written' });
    expect((await database.pool.query('SELECT last_seq, events FROM conversations')).rows[0]).toEqual({
      last_seq: 3,
      events: 2,
    });
    expect((await database.pool.query('SELECT outcome, error, result_type FROM tool_calls')).rows).toEqual([
      { outcome: 'agent_error', error: 'unknown tool nope', result_type: 'agent_error' },
    ]);
  });

  it("keeps a deleted conversation's rows, or drops them and what comes of it late, never those of the conversation created again under its id", async () => {
    const say = (text: string, to: ConversationRef): EventDraft[] => [
      draftEvent({ ...to, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    ];
    const kept: ConversationRef = { tenant: 'acme', conversation: 'kept' };
    const dropped: ConversationRef = { tenant: 'acme', conversation: 'dropped' };
    const keeping = writer();
    const dropping = new CommitWriter(database.pool, {
      firstCommitSeq: () => Promise.resolve(undefined),
      dropDeleted: true,
    });
    const rows = async (to: ConversationRef) => {
      const counts = await Promise.all(
        ['events', 'commits', 'conversations'].map(
          async (table) =>
            (
              await database.pool.query(
                `SELECT count(*)::int AS n FROM ${table} WHERE tenant = $1 AND conversation = $2`,
                [to.tenant, to.conversation],
              )
            ).rows[0].n as number,
        ),
      );
      return counts;
    };
    expect(await keeping.write(commitOf(say('one', kept), kept))).toEqual({ kind: 'written' });
    const first = commitOf(say('one', dropped), dropped);
    expect(await dropping.write(first)).toEqual({ kind: 'written' });
    const second = commitOf(say('two', dropped), dropped);
    // the deletion covers both commits of `dropped`; the second comes late (delivered before the purge, written after)
    const deletion = { reason: 'expired', at: '2026-12-06T00:00:00.000Z', upToStreamSeq: second.streamSeq };
    await keeping.recordDeletion({ ...kept, ...deletion });
    await dropping.recordDeletion({ ...dropped, ...deletion });
    await dropping.recordDeletion({ ...dropped, ...deletion });
    expect(await dropping.write(second)).toEqual({ kind: 'deleted' });
    expect(await rows(kept)).toEqual([1, 1, 1]);
    expect(await rows(dropped)).toEqual([0, 0, 0]);
    expect(
      (await database.pool.query('SELECT conversation, reason, rows_dropped FROM deletions ORDER BY conversation'))
        .rows,
    ).toEqual([
      { conversation: 'dropped', reason: 'expired', rows_dropped: true },
      { conversation: 'kept', reason: 'expired', rows_dropped: false },
    ]);
    // created again under the same id: its log starts again after the deletion, and is written
    tails.delete(`${dropped.tenant}/${dropped.conversation}`);
    const again = commitOf(say('again', dropped), dropped);
    expect(await dropping.write(again)).toEqual({ kind: 'written' });
    // an older deletion notice read late drops nothing of it
    await dropping.recordDeletion({ ...dropped, ...deletion, upToStreamSeq: first.streamSeq });
    expect(await rows(dropped)).toEqual([1, 1, 1]);
  });

  it('records invalid messages once, apart from the events', async () => {
    const sink = writer();
    await sink.recordInvalid(7, 'flotilla.ev.acme.c1', 'foreign message');
    await sink.recordInvalid(7, 'flotilla.ev.acme.c1', 'foreign message');
    expect((await database.pool.query('SELECT stream_seq, reason FROM invalid_messages')).rows).toEqual([
      { stream_seq: 7, reason: 'foreign message' },
    ]);
    expect((await database.pool.query('SELECT count(*)::int AS n FROM events')).rows[0].n).toBe(0);
  });

  it('migrates once: a second run applies nothing', async () => {
    expect(await migrate(database.pool)).toEqual([]);
    expect((await database.pool.query('SELECT version FROM flotilla_sink_migrations ORDER BY version')).rows).toEqual(
      MIGRATIONS.map(({ version }) => ({ version })),
    );
  });
  it('writes the commits given while a transaction is under way together, in order, a redelivered one once and a later one after the earlier', async () => {
    const other: ConversationRef = { tenant: 'globex', conversation: 'c2' };
    const say = (text: string, at: ConversationRef = ref): EventDraft[] => [
      draftEvent({ ...at, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    ];
    const [a1, b1, a2, b2, a3, a4] = [
      commitOf(say('a1')),
      commitOf(say('b1', other), other),
      commitOf(say('a2')),
      commitOf(say('b2', other), other),
      commitOf(say('a3')),
      commitOf(say('a4')),
    ];
    const sink = new CommitWriter(database.pool, { firstCommitSeq: () => Promise.resolve(1), transactions: 1 });
    // the first is written at once; the others wait for it and go together, a4 ahead of a3
    const outcomes = await Promise.all([a1, b1, a2, a1, b2, a4!, a3!].map((commit) => sink.write(commit!)));
    expect(outcomes.map((outcome) => outcome.kind)).toEqual([
      'written',
      'written',
      'written',
      'duplicate',
      'written',
      'out_of_order',
      'written',
    ]);
    expect((await database.pool.query('SELECT count(DISTINCT applied_at)::int AS n FROM commits')).rows[0].n).toBe(2);
    expect(await sink.write(a4!)).toEqual({ kind: 'written' });
    const rows = (
      await database.pool.query('SELECT tenant, last_seq, commits, user_messages FROM conversations ORDER BY tenant')
    ).rows;
    expect(rows).toEqual([
      { tenant: 'acme', last_seq: 4, commits: 4, user_messages: 4 },
      { tenant: 'globex', last_seq: 2, commits: 2, user_messages: 2 },
    ]);
    expect(
      (await database.pool.query('SELECT seq, event FROM events WHERE tenant = $1 ORDER BY seq', ['acme'])).rows.map(
        (row) => row.event.content[0].text,
      ),
    ).toEqual(['a1', 'a2', 'a3', 'a4']);
  });

  it('of two starts of one call written together, keeps the first', async () => {
    const agent = { ...ref, source: 'agent' as const };
    const step = commitOf([
      draftEvent(agent, 'action', {
        tool_call_id: 'call-1',
        tool_name: 'terminal',
        arguments: '{}',
        input: { command: 'ls' },
        thought: [],
        response_id: 'r1',
        security_risk: 'low',
      }),
    ]);
    const actionId = step.events[0]!.id;
    const first = commitOf([
      draftEvent({ ...ref, source: 'environment', now: at(200) }, 'execution_started', {
        action_ids: [actionId],
        runner: 'runner-1',
      }),
    ]);
    const second = commitOf([
      draftEvent({ ...ref, source: 'environment', now: at(300) }, 'execution_started', {
        action_ids: [actionId],
        runner: 'runner-2',
      }),
    ]);
    const sink = new CommitWriter(database.pool, { firstCommitSeq: () => Promise.resolve(1), transactions: 1 });
    // the action is written at once; both starts wait for it and go together
    expect(
      (await Promise.all([step, first, second].map((commit) => sink.write(commit)))).map((outcome) => outcome.kind),
    ).toEqual(['written', 'written', 'written']);
    expect((await database.pool.query('SELECT runner FROM tool_calls')).rows).toEqual([{ runner: 'runner-1' }]);
  });
});
