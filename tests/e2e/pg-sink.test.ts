import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { userEnvironment } from '@flotilla/bus';
import type { Event } from '@flotilla/events';
import type { ConversationRef, EventLog, StoredCommit } from '@flotilla/log';
import { createTestDatabase, startPostgresServer } from '@flotilla/pg-sink/testing';
import { describe, expect, it } from 'vitest';
import { runToExit, type Exited } from '../support/run-to-exit.js';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';

const FLOTILLA = fileURLToPath(new URL('../../services/cli/bin/flotilla', import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The environment of `flotilla tap` as a generated NATS user (never the test's own admin). */
function tapEnv(system: RunningTestSystem, user: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith('FLOTILLA_')) delete env[name];
  return { ...env, FLOTILLA_NATS_URL: system.natsUrl, ...userEnvironment(system.users.get(user)!) };
}

function tap(system: RunningTestSystem, user: string, args: readonly string[]): Promise<Exited> {
  return runToExit(FLOTILLA, ['tap', ...args], { env: tapEnv(system, user), cwd: tmpdir(), timeoutMs: 60_000 });
}

/** Every commit of these conversations, in stream order (what a tap of them must print, event by event). */
async function commitsOf(log: EventLog, refs: readonly ConversationRef[]): Promise<StoredCommit[]> {
  const commits: StoredCommit[] = [];
  for (const ref of refs) for await (const commit of log.read(ref)) commits.push(commit);
  return commits.sort((a, b) => a.streamSeq - b.streamSeq);
}

const eventsOf = (commits: readonly StoredCommit[]): Event[] => commits.flatMap((commit) => commit.events);
const parseLines = (text: string): Event[] =>
  text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Event);

describe('flotilla tap', () => {
  it("over one tenant sees exactly that tenant's events, in order; a named tap resumes after a restart with no gap and no duplicate", async () => {
    // the one refusal below is on purpose (checked at the end)
    await using system = await startTestSystem({ expectPermissionViolations: true });
    const acme = Array.from({ length: 3 }, (_, index) => ({ tenant: 'acme', conversation: `tap-acme-${index}` }));
    const globex = Array.from({ length: 2 }, (_, index) => ({ tenant: 'globex', conversation: `tap-globex-${index}` }));
    await Promise.all(
      [...acme, ...globex].map((ref) => system.start(ref, { id: ref.conversation, steps: 4, sleep: 0.3 })),
    );

    // a named tap of acme's conversations follows them while they run, and is stopped half way
    const named = spawn(FLOTILLA, ['tap', '--tenant', 'acme', '--name', 'audit', '--follow'], {
      env: tapEnv(system, 'tap-acme'),
      cwd: tmpdir(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let firstRun = '';
    let firstErr = '';
    named.stdout.setEncoding('utf8').on('data', (chunk: string) => (firstRun += chunk));
    named.stderr.setEncoding('utf8').on('data', (chunk: string) => (firstErr += chunk));
    const exited = new Promise<number | null>((resolve) => named.once('close', (code) => resolve(code)));
    await expect.poll(() => parseLines(firstRun).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(6);
    named.kill('SIGINT');
    expect(await exited, firstErr).toBe(130);
    const before = parseLines(firstRun);

    await system.waitForStatus([...acme, ...globex], ['finished', 'error', 'stuck'], 90_000);
    // more of acme after the stop
    const later = { tenant: 'acme', conversation: 'tap-acme-later' };
    await system.start(later, { id: later.conversation, steps: 2 });
    await system.waitForStatus([later], ['finished', 'error', 'stuck'], 60_000);
    const expected = eventsOf(await commitsOf(system.log, [...acme, later]));
    expect(before.length).toBeLessThan(expected.length); // it was stopped mid-stream

    const resumed = await tap(system, 'tap-acme', ['--tenant', 'acme', '--name', 'audit']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('named tap audit resumed');
    const after = parseLines(resumed.stdout);
    // no gap, no duplicate, stream order: the two runs together are acme's log, event for event
    expect([...before, ...after]).toEqual(expected);

    // an unnamed tap from the start, with the tap of every tenant, filtered to acme: the same
    const all = await tap(system, 'tap', ['--tenant', 'acme']);
    expect(all.code, all.stderr).toBe(0);
    expect(parseLines(all.stdout)).toEqual(expected);
    // filters: one conversation, one event type
    const one = await tap(system, 'tap', ['--conversation', 'tap-globex-1', '--type', 'action,observation']);
    expect(parseLines(one.stdout)).toEqual(
      eventsOf(await commitsOf(system.log, [globex[1]!])).filter(
        (event) => event.type === 'action' || event.type === 'observation',
      ),
    );
    // the tenant's credential cannot read another tenant, even when asked to
    const refused = await tap(system, 'tap-acme', ['--tenant', 'globex']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/permission/i);
    expect(refused.stdout).toBe('');
    // a corrupt message in the log is reported on stderr, not printed as an event
    system.nc.publish('flotilla.ev.acme.tap-acme-0.user', 'not a commit');
    await system.nc.flush();
    const withCorrupt = await tap(system, 'tap', ['--conversation', 'tap-acme-0']);
    expect(withCorrupt.code).toBe(0);
    expect(parseLines(withCorrupt.stdout)).toEqual(eventsOf(await commitsOf(system.log, [acme[0]!])));
    expect(withCorrupt.stderr).toMatch(/is not a valid commit, skipped: foreign message/);
    expect(system.violations.length).toBeGreaterThan(0);
    expect(
      system.violations.filter(
        (line) => !(line.includes('/user:tap-acme" - ') && line.includes('flotilla.ev.globex.')),
      ),
    ).toEqual([]);
  }, 240_000);
});

type EventRow = {
  stream_seq: number;
  position: number;
  seq: number;
  tenant: string;
  conversation: string;
  id: string;
  type: string;
  source: string;
  timestamp: Date;
  event: Event;
};

describe('the PostgreSQL sink', () => {
  it('under chaos (the sink SIGKILLed, PostgreSQL and nats-server restarted while conversations run) holds exactly the stream, and aggregates matching a fold of the log', async (context) => {
    await using postgres = await startPostgresServer();
    if (!postgres) {
      context.skip(
        'no PostgreSQL server binaries on this machine (apt-get install postgresql): the chaos test needs a PostgreSQL of its own to restart',
      );
      return;
    }
    await using database = await createTestDatabase(postgres.url);
    await using system = await startTestSystem({
      stepWorkers: 2,
      toolRunners: 2,
      pgSinks: 1,
      databaseUrl: database.url,
      captureLogs: true,
    });
    const refs = [
      ...Array.from({ length: 6 }, (_, index) => ({ tenant: 'acme', conversation: `sink-acme-${index}` })),
      ...Array.from({ length: 4 }, (_, index) => ({ tenant: 'globex', conversation: `sink-globex-${index}` })),
    ];
    await Promise.all(
      refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 10, sleep: 0.3, parallel: 2 })),
    );
    const running = async (): Promise<number> =>
      (await Promise.all(refs.map((ref) => system.status(ref)))).filter((status) => status === 'running').length;
    const sink = system.processes.find((child) => child.name === 'pg-sink-1')!;
    await sleep(1_500);
    await sink.kill('SIGKILL'); // the supervisor starts it again
    await sleep(1_500);
    expect(await running()).toBeGreaterThan(0);
    await postgres.crash();
    await sleep(1_500);
    await postgres.start();
    await sleep(1_000);
    expect(await running()).toBeGreaterThan(0);
    await system.nats.kill('SIGKILL');
    await sleep(1_500);
    await system.nats.restart();
    await sleep(500);
    await sink.kill('SIGKILL');
    await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 180_000);
    for (const ref of refs) expect(await system.status(ref)).toBe('finished');

    const commits = await commitsOf(system.log, refs);
    const events = eventsOf(commits);
    const count = async (): Promise<number> =>
      (await database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n;
    await expect.poll(count, { timeout: 60_000, interval: 250 }).toBe(events.length);

    // row by row: every event of every log, once, at its stream position, as the log has it
    const rows = (
      await database.pool.query<EventRow>(
        'SELECT stream_seq, position, seq, tenant, conversation, id, type, source, "timestamp", event FROM events ORDER BY stream_seq, position',
      )
    ).rows;
    const expectedRows = commits.flatMap((commit) =>
      commit.events.map((event, position) => ({
        stream_seq: commit.streamSeq,
        position,
        seq: event.seq,
        tenant: event.tenant,
        conversation: event.conversation,
        id: event.id,
        type: event.type,
        source: event.source,
        timestamp: new Date(event.timestamp),
        event,
      })),
    );
    expect(rows).toEqual(expectedRows);
    expect(
      (await database.pool.query('SELECT stream_seq FROM commits ORDER BY stream_seq')).rows.map(
        (row) => row.stream_seq,
      ),
    ).toEqual(commits.map((commit) => commit.streamSeq));

    // conversations: a fold of each log
    const conversations = (await database.pool.query('SELECT * FROM conversations ORDER BY tenant, conversation')).rows;
    const expectedConversations = refs
      .map((ref) =>
        foldConversation(
          ref,
          events.filter((event) => event.tenant === ref.tenant && event.conversation === ref.conversation),
          commits,
        ),
      )
      .sort((a, b) => `${a.tenant}/${a.conversation}`.localeCompare(`${b.tenant}/${b.conversation}`));
    expect(conversations.map((row) => pick(row, Object.keys(expectedConversations[0]!)))).toEqual(
      expectedConversations,
    );

    // model calls: one per llm_usage event
    const modelCalls = (
      await database.pool.query(
        'SELECT event_id, model, purpose, prompt_tokens, completion_tokens, latency_ms, cost_usd FROM model_calls ORDER BY stream_seq, position',
      )
    ).rows;
    expect(modelCalls).toEqual(
      events.flatMap((event) =>
        event.type === 'llm_usage'
          ? [
              {
                event_id: event.id,
                model: event.model,
                purpose: event.purpose,
                prompt_tokens: event.prompt_tokens,
                completion_tokens: event.completion_tokens,
                latency_ms: event.latency_ms,
                cost_usd: event.cost_usd,
              },
            ]
          : [],
      ),
    );
    // tool calls: each action joined with its start and its result
    const toolCalls = (
      await database.pool.query(
        'SELECT tenant, conversation, action_id, tool_name, started_at, finished_at, outcome, duration_ms FROM tool_calls ORDER BY tenant, conversation, action_seq',
      )
    ).rows;
    expect(toolCalls).toEqual(
      foldToolCalls(events)
        .sort((a, b) => `${a.tenant}/${a.conversation}`.localeCompare(`${b.tenant}/${b.conversation}`) || a.seq - b.seq)
        .map(({ seq: _seq, ...call }) => call),
    );
    expect(toolCalls.length).toBe(refs.length * 10 * 2);
    // the chaos happened to the sink: killed twice, and it waited PostgreSQL out
    expect(
      sink.unexpectedExits.map((exit) => exit.signal ?? `exit ${exit.code}: ${exit.lastLines.slice(-3).join(' | ')}`),
    ).toEqual(['SIGKILL', 'SIGKILL']);
    expect(
      system.logLines.some(
        (line) => line.includes('PostgreSQL is not available') || line.includes('PostgreSQL is not reachable yet'),
      ),
    ).toBe(true);
    expect(
      toolCalls.filter((call) => call.outcome !== 'ok' || call.duration_ms < 300),
      'tool calls not ok, or shorter than the tool sleeps',
    ).toEqual([]);

    // caught up: nothing pending, no lag; ready
    const health = system.healthUrls.get('pg-sink-1')!;
    const caughtUp = async (): Promise<boolean> => {
      const metrics = await (await fetch(`${health}/metrics`)).text();
      return (
        /^flotilla_sink_pending\{[^}]*\} 0$/m.test(metrics) && /^flotilla_sink_lag_seconds\{[^}]*\} 0$/m.test(metrics)
      );
    };
    await expect.poll(caughtUp, { timeout: 20_000 }).toBe(true);
    expect((await fetch(`${health}/ready`)).status).toBe(200);
  }, 400_000);
});

function pick(row: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, row[key]]));
}

/** What the conversations table must say of one log, folded here independently of libs/state. */
function foldConversation(ref: ConversationRef, events: readonly Event[], commits: readonly StoredCommit[]) {
  let status = 'idle';
  let title: string | null = null;
  const count = (type: string): number => events.filter((event) => event.type === type).length;
  const usage = events.flatMap((event) => (event.type === 'llm_usage' ? [event] : []));
  for (const event of events) {
    if (event.type !== 'state_change') continue;
    if (event.status) status = event.status;
    if (event.title !== undefined) title = event.title;
  }
  const own = commits.filter((commit) => commit.tenant === ref.tenant && commit.conversation === ref.conversation);
  return {
    tenant: ref.tenant,
    conversation: ref.conversation,
    status,
    title,
    last_seq: events.at(-1)!.seq,
    last_stream_seq: own.at(-1)!.streamSeq,
    commits: own.length,
    events: events.length,
    actions: count('action'),
    observations: count('observation'),
    agent_errors: count('agent_error'),
    llm_calls: usage.length,
    prompt_tokens: usage.reduce((sum, event) => sum + event.prompt_tokens, 0),
    completion_tokens: usage.reduce((sum, event) => sum + event.completion_tokens, 0),
    cost_usd: usage.reduce((sum, event) => sum + event.cost_usd, 0),
    model: usage.at(-1)?.model ?? null,
    created_at: new Date(events[0]!.timestamp),
    updated_at: new Date(events.at(-1)!.timestamp),
  };
}

function foldToolCalls(events: readonly Event[]) {
  const started = new Map<string, string>();
  const results = new Map<string, { at: string; outcome: string }>();
  for (const event of events) {
    if (event.type === 'execution_started') for (const id of event.action_ids) started.set(id, event.timestamp);
    if (event.type === 'observation')
      results.set(event.action_id, { at: event.timestamp, outcome: event.is_error ? 'error' : 'ok' });
    if (event.type === 'user_rejection') results.set(event.action_id, { at: event.timestamp, outcome: 'rejected' });
    if (event.type === 'agent_error' && event.action_id)
      results.set(event.action_id, { at: event.timestamp, outcome: 'agent_error' });
  }
  return events.flatMap((event) => {
    if (event.type !== 'action') return [];
    const start = started.get(event.id);
    const result = results.get(event.id);
    return [
      {
        tenant: event.tenant,
        conversation: event.conversation,
        action_id: event.id,
        tool_name: event.tool_name,
        started_at: start ? new Date(start) : null,
        finished_at: result ? new Date(result.at) : null,
        outcome: result?.outcome ?? null,
        duration_ms: start && result ? new Date(result.at).getTime() - new Date(start).getTime() : null,
        seq: event.seq,
      },
    ];
  });
}

describe('the PostgreSQL sink and deleted conversations', () => {
  it("drops a deleted conversation's rows when told to (FLOTILLA_SINK_DELETED=drop), recording the deletion, and keeps every other's", async () => {
    await using database = await createTestDatabase();
    await using system = await startTestSystem({
      gateway: true,
      pgSinks: 1,
      databaseUrl: database.url,
      env: { FLOTILLA_SINK_DELETED: 'drop' },
    });
    const refs = ['gone', 'stays'].map((conversation) => ({ tenant: 'acme', conversation }));
    await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 2 })));
    await system.waitForStatus(refs, ['finished'], 60_000);
    const rows = async (conversation: string): Promise<number[]> =>
      Promise.all(
        ['events', 'commits', 'conversations', 'model_calls'].map(
          async (table) =>
            (
              await database.pool.query<{ n: number }>(
                `SELECT count(*)::int AS n FROM ${table} WHERE tenant = 'acme' AND conversation = $1`,
                [conversation],
              )
            ).rows[0]!.n,
        ),
      );
    const logged = async (ref: ConversationRef): Promise<number> =>
      (await commitsOf(system.log, [ref])).flatMap((commit) => commit.events).length;
    const stays = await logged(refs[1]!);
    await expect.poll(async () => (await rows('gone'))[0], { timeout: 30_000 }).toBe(await logged(refs[0]!));
    await expect.poll(async () => (await rows('stays'))[0], { timeout: 30_000 }).toBe(stays);

    const deleted = await system.api('DELETE', '/conversations/gone');
    expect(deleted.status, deleted.text).toBe(204);
    await expect.poll(() => rows('gone'), { timeout: 30_000 }).toEqual([0, 0, 0, 0]);
    expect(
      (await database.pool.query('SELECT tenant, conversation, reason, rows_dropped FROM deletions')).rows,
    ).toEqual([{ tenant: 'acme', conversation: 'gone', reason: 'deleted', rows_dropped: true }]);
    const [events, commits, conversations, calls] = await rows('stays');
    expect([events, conversations]).toEqual([stays, 1]);
    expect(commits).toBeGreaterThan(0);
    expect(calls).toBeGreaterThan(0);
  }, 120_000);
});
