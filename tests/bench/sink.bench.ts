import { draftEvent } from '@flotilla/events';
import { decodeCommit, EMPTY_TAIL, type ConversationRef, type EventLog, type Tail } from '@flotilla/log';
import { createTestDatabase } from '@flotilla/pg-sink/testing';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { rawDrain, restartAndDrain, runtimeConsumerDrain } from './backlog-drain.bench.js';
import { condensedConversationCommits } from './condensed-conversation.js';
import { percentile, table } from './stats.js';
import { throughputRun, TOPOLOGIES, type ThroughputObserver } from './throughput.bench.js';

/** The sink's durable consumer (services/pg-sink SINK_GROUP) and its process in the test system. */
const SINK_GROUP = 'pg-sink';
const SINK_PROCESS = 'pg-sink-1';

/**
 * The PostgreSQL sink (services/pg-sink), issue 19's benchmark. First a backlog of many
 * conversations written while the sink is stopped, drained by a bare durable nats.js consumer
 * (acking each commit) and by the sink started again, from its start until its group has nothing
 * pending or unacknowledged (it acknowledges a commit only after its transaction committed, and
 * the tables are checked to hold every commit and event). Goal: >= 50 % of the bare rate.
 * Then the sink under the `throughput` benchmark's load (its first topology, run by its own code
 * with a sink added): its lag over the window. Goal: under 1 s.
 */
export async function benchSink(conversations = 400): Promise<string> {
  const backlog = await benchSinkBacklog(conversations);
  await using observer = await sinkLagObserver();
  const { report: load } = await throughputRun(TOPOLOGIES[0]!, observer);
  return `${backlog}\n\n${load}`;
}

/** The backlog part of benchSink alone (e.g. to profile the sink: FLOTILLA_TEST_NODE_ARGS, tests/support/system.ts). */
export async function benchSinkBacklog(conversations = 400): Promise<string> {
  await using database = await createTestDatabase();
  // the projector only to create the stream (the sink's credential reads it, never creates it)
  await using system = await startTestSystem({
    stepWorkers: 0,
    toolRunners: 0,
    projectors: 1,
    pgSinks: 1,
    databaseUrl: database.url,
  });
  await Promise.all(system.processes.map((child) => child.stop()));
  const sink = system.processes.find((child) => child.name === SINK_PROCESS)!;
  const { commits, events } = await writeBacklog(system.log, conversations);

  const { nc, log } = system;
  const bare = await rawDrain(nc, log.jsm, log.streamName, commits);
  // what any sink does before PostgreSQL: the runtime's consumer, and each commit validated (libs/log)
  let invalid = 0;
  const decoded = await runtimeConsumerDrain(system, commits, true, (delivery) => {
    if (!delivery.ref || !decodeCommit(delivery.message, delivery.ref).ok) invalid += 1;
  });
  if (invalid > 0) throw new Error(`${invalid} messages of the backlog are not valid commits`);
  const [drained] = await restartAndDrain(system, [sink]);
  const { ms, readyMs } = drained!;
  const bareAgain = await rawDrain(nc, log.jsm, log.streamName, commits);
  await sink.stop();

  const { rows } = await database.pool.query<{ commits: string; events: string; conversations: string }>(
    'SELECT (SELECT count(*) FROM commits) AS commits, (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM conversations) AS conversations',
  );
  const written = rows[0]!;
  if (
    Number(written.commits) !== commits ||
    Number(written.events) !== events ||
    Number(written.conversations) !== conversations
  ) {
    throw new Error(
      `the sink wrote ${written.commits} commits, ${written.events} events, ${written.conversations} conversations; the stream holds ${commits}, ${events}, ${conversations}`,
    );
  }
  const baseline = Math.min(bare, bareAgain);
  const rate = (ms: number): string => Math.round(events / (ms / 1_000)).toLocaleString('en');
  const commitRate = (ms: number): string => Math.round(commits / (ms / 1_000)).toLocaleString('en');
  const of = (ms: number): string => `${((100 * baseline) / ms).toFixed(1)} %`;
  const table1 = [
    ['drain of the backlog', 'time', 'events/s', 'commits/s', 'of the bare rate'],
    [
      'bare durable nats.js consumer, before the sink (acks each commit)',
      seconds(bare),
      rate(bare),
      commitRate(bare),
      of(bare),
    ],
    ['the same, after the sink', seconds(bareAgain), rate(bareAgain), commitRate(bareAgain), of(bareAgain)],
    [
      'startCommitConsumer (BatchedPull, 32 at once), each commit decoded (decodeCommit), no database',
      seconds(decoded),
      rate(decoded),
      commitRate(decoded),
      of(decoded),
    ],
    ['pg-sink, its start to everything in PostgreSQL (goal >= 50 %)', seconds(ms), rate(ms), commitRate(ms), of(ms)],
    [
      `  of which start-up (to ready), and the rate after it`,
      seconds(readyMs),
      rate(ms - readyMs),
      commitRate(ms - readyMs),
      of(ms - readyMs),
    ],
  ];
  return `a backlog of ${commits.toLocaleString('en')} commits, ${events.toLocaleString('en')} events, ${conversations} conversations (condensed as the runtime writes them, 50-320 events each); the bare rate is the faster of its two runs\n${table(table1)}`;
}

/** Conversations of 50 to 320 events (the longer ones condensed), each ended by a finish, written 20 at a time. */
async function writeBacklog(log: EventLog, conversations: number): Promise<{ commits: number; events: number }> {
  let commits = 0;
  let events = 0;
  const writeOne = async (index: number): Promise<void> => {
    const ref: ConversationRef = { tenant: `tenant-${index % 8}`, conversation: `backlog-${index}` };
    let tail: Tail = EMPTY_TAIL;
    const append = async (drafts: Parameters<EventLog['append']>[1]): Promise<void> => {
      const commit = await log.append(ref, drafts, { expected: tail });
      tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
      commits += 1;
      events += drafts.length;
    };
    for (const drafts of condensedConversationCommits(ref, 50 + (index % 10) * 30)) await append(drafts);
    await append([
      draftEvent({ ...ref, source: 'agent' }, 'message', {
        role: 'assistant',
        content: [{ type: 'text', text: 'Done.' }],
      }),
      draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'finished', reason: 'the agent finished' }),
    ]);
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < conversations) await writeOne(next++);
    }),
  );
  return { commits, events };
}

/**
 * Samples the sink's own gauges (flotilla_sink_lag_seconds, flotilla_sink_pending on its /metrics)
 * every 250 ms over the throughput window; at its end waits for the sink to have written every
 * commit of the window and measures each one's lag from the database: from its last event's
 * timestamp (drafted just before the append) to the transaction that wrote it (commits.applied_at).
 */
async function sinkLagObserver(): Promise<ThroughputObserver & AsyncDisposable> {
  const database = await createTestDatabase();
  const lags: number[] = [];
  const pendings: number[] = [];
  let timer: NodeJS.Timeout | undefined;
  let windowStart = 0;
  let sampling: Promise<void> = Promise.resolve();
  const gauge = (metrics: string, name: string): number | undefined => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics);
    return match ? Number(match[1]) : undefined;
  };
  return {
    system: { pgSinks: 1, databaseUrl: database.url },
    start(system: RunningTestSystem) {
      windowStart = Date.now();
      const url = `${system.healthUrls.get(SINK_PROCESS)!}/metrics`;
      timer = setInterval(() => {
        sampling = sampling.then(async () => {
          const metrics = await (await fetch(url)).text();
          const lag = gauge(metrics, 'flotilla_sink_lag_seconds');
          const pending = gauge(metrics, 'flotilla_sink_pending');
          if (lag !== undefined) lags.push(lag);
          if (pending !== undefined) pendings.push(pending);
        });
      }, 250);
    },
    async stop(system: RunningTestSystem) {
      clearInterval(timer);
      await sampling;
      const windowEnd = Date.now();
      const { log } = system;
      const last = (await log.jsm.streams.info(log.streamName)).state.last_seq;
      const caughtUpBy = Date.now() + 60_000;
      while ((await log.jsm.consumers.info(log.streamName, SINK_GROUP)).ack_floor.stream_seq < last) {
        if (Date.now() > caughtUpBy)
          throw new Error(`the sink had not written stream position ${last} a minute after the window`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const caughtUpMs = Date.now() - windowEnd;
      const { rows } = await database.pool.query<{ ms: string }>(
        `SELECT extract(epoch FROM c.applied_at - max(e."timestamp")) * 1000 AS ms
         FROM commits c JOIN events e USING (stream_seq) GROUP BY c.stream_seq, c.applied_at
         HAVING max(e."timestamp") >= $1 AND max(e."timestamp") < $2`,
        [new Date(windowStart), new Date(windowEnd)],
      );
      const perCommit = rows.map((row) => Number(row.ms));
      const seconds = (windowEnd - windowStart) / 1_000;
      const s = (value: number): string => `${(value / 1_000).toFixed(3)} s`;
      const rowsOut = [
        ['the sink under this load (goal: lag under 1 s)', 'p50', 'p90', 'p99', 'max', 'n'],
        [
          'flotilla_sink_lag_seconds, sampled every 250 ms',
          s(1_000 * percentile(lags, 50)),
          s(1_000 * percentile(lags, 90)),
          s(1_000 * percentile(lags, 99)),
          s(1_000 * Math.max(...lags)),
          String(lags.length),
        ],
        [
          'flotilla_sink_pending (commits), sampled with it',
          String(percentile(pendings, 50)),
          String(percentile(pendings, 90)),
          String(percentile(pendings, 99)),
          String(Math.max(...pendings)),
          String(pendings.length),
        ],
        [
          'each commit of the window: its last event to its row (applied_at)',
          s(percentile(perCommit, 50)),
          s(percentile(perCommit, 90)),
          s(percentile(perCommit, 99)),
          s(Math.max(...perCommit)),
          String(perCommit.length),
        ],
      ];
      return `${table(rowsOut)}\ncommits appended in the window: ${(perCommit.length / seconds).toFixed(0)}/s; every commit of the window written ${(caughtUpMs / 1_000).toFixed(2)} s after it closed`;
    },
    [Symbol.asyncDispose]: () => database[Symbol.asyncDispose](),
  };
}

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(2)} s`;
