import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { draftEvent, newId, type Event } from '@flotilla/events';
import { encodeCommit, EventLog, placeEvents } from '@flotilla/log';
import { freePort, NatsServerProcess } from '@flotilla/nats-embedded';
import { formatLogLine, ServiceProcess, waitReady } from '@flotilla/supervisor';
import { groupBacklog } from '@flotilla/runtime';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { serviceEntry } from '../support/system.js';
import { conversationCommits } from './conversation-fixture.js';
import { sumByLabel, memoryMiB } from './process-stats.js';
import { ratio, table } from './stats.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Resident memory of one step-worker process after its durable consumer delivered a store of many
 * finished conversations (deliver all: every commit is a wake-up, the tail ones are loaded and found
 * at rest), against the same worker started on an empty store, same server, same run.
 *
 * Both are read 30 s after the drain (or the start): the services run on jemalloc, which gives
 * freed pages back in two decay stages of 10 s each (dirty, then muzzy: MADV_FREE'd pages still
 * count in RSS until released), so a reading within 20 s of a burst counts memory already freed.
 * A drain on direct-get batches ends in seconds, with that burst still decaying.
 */
export async function benchStepWorkerMemory(
  conversations = 10_000,
  eventsEach = 100,
  settleMs = 30_000,
): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'flotilla-bench-memory-'));
  await using server = await NatsServerProcess.start({ storeDir: join(home, 'nats') });
  const nc = await connect({ servers: server.url });
  try {
    const log = await EventLog.open(nc);
    const empty = await measureWorker(log, server.url, home, settleMs);
    const started = performance.now();
    const commits = await writeStore(log, conversations, eventsEach);
    const writeSeconds = (performance.now() - started) / 1_000;
    const loaded = await measureWorker(log, server.url, home, settleMs);
    const rows = [
      [
        'step-worker',
        'RSS',
        'peak RSS',
        'JS heap used',
        'JS heap committed',
        'external',
        'commits delivered',
        'handled by outcome',
        'time to drain',
        'heap releases',
      ],
      [
        'empty store',
        mib(empty.rss),
        mib(empty.peak),
        mib(empty.heapUsed),
        mib(empty.heapTotal),
        mib(empty.external),
        '0',
        '',
        '',
        String(empty.releases),
      ],
      [
        `${conversations} conversations x ${eventsEach} events`,
        mib(loaded.rss),
        mib(loaded.peak),
        mib(loaded.heapUsed),
        mib(loaded.heapTotal),
        mib(loaded.external),
        String(commits),
        loaded.outcomes,
        `${loaded.drainSeconds.toFixed(1)} s`,
        String(loaded.releases),
      ],
      [
        'ratio',
        ratio(loaded.rss, empty.rss),
        ratio(loaded.peak, empty.peak),
        ratio(loaded.heapUsed, empty.heapUsed),
        ratio(loaded.heapTotal, empty.heapTotal),
        ratio(loaded.external, empty.external),
        '',
        '',
        '',
        '',
      ],
    ];
    return [
      `Step-worker memory after delivering a stored backlog (RSS ${settleMs / 1_000} s after the backlog drained; goal: RSS ratio <= 1.2)`,
      table(rows),
      `store written in ${writeSeconds.toFixed(1)} s (${Math.round(commits / writeSeconds)} commits/s, pipelined across conversations)`,
    ].join('\n');
  } finally {
    await nc.close();
    await rm(home, { recursive: true, force: true });
  }
}

function mib(value: number): string {
  return `${value.toFixed(1)} MiB`;
}

type WorkerMemory = {
  releases: number;
  rss: number;
  peak: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  outcomes: string;
  drainSeconds: number;
};

/** Starts a step worker, waits until its group's consumer has nothing pending, lets it settle, and reads its memory. */
async function measureWorker(log: EventLog, natsUrl: string, home: string, settleMs: number): Promise<WorkerMemory> {
  const healthPort = await freePort();
  const health = `http://127.0.0.1:${healthPort}`;
  const worker = new ServiceProcess({
    name: 'step-worker-1',
    entry: await serviceEntry(join(ROOT, 'services', 'step-worker', 'src', 'main.ts')),
    cwd: ROOT,
    restart: false,
    nodeArgs: (process.env['FLOTILLA_TEST_NODE_ARGS'] ?? '').split(' ').filter(Boolean),
    env: {
      FLOTILLA_NATS_URL: natsUrl,
      FLOTILLA_HOME: home,
      FLOTILLA_HEALTH_PORT: String(healthPort),
      FLOTILLA_AGENT: JSON.stringify({
        llm: { provider: 'openai-chat', model: 'none', baseURL: 'http://127.0.0.1:9/v1', apiKey: 'unused' },
      }),
      FLOTILLA_LOG_LEVEL: 'warn',
    },
    onLine: (name, line) => {
      if (line.includes('"level":50') || line.includes('"level":60'))
        process.stderr.write(`${formatLogLine(name, line)}\n`);
    },
  });
  worker.start();
  try {
    await waitReady(health, 60_000);
    const started = performance.now();
    for (;;) {
      if ((await groupBacklog(log.jsm, log.streamName, 'step-worker')) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const drainSeconds = (performance.now() - started) / 1_000;
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const memory = await memoryMiB(worker.pid!);
    const handled = await sumByLabel(`${health}/metrics`, 'flotilla_commits_handled_total', 'outcome');
    const gauge = async (name: string): Promise<number> =>
      ([...(await sumByLabel(`${health}/metrics`, name, 'service')).values()][0] ?? Number.NaN) / 1024 / 1024;
    return {
      ...memory,
      heapUsed: await gauge('nodejs_heap_size_used_bytes'),
      heapTotal: await gauge('nodejs_heap_size_total_bytes'),
      external: await gauge('nodejs_external_memory_bytes'),
      releases:
        [...(await sumByLabel(`${health}/metrics`, 'flotilla_heap_releases_total', 'service')).values()][0] ?? 0,
      drainSeconds,
      outcomes: [...handled].map(([outcome, count]) => `${outcome} ${count}`).join(', '),
    };
  } finally {
    await worker.stop();
  }
}

/**
 * Writes finished conversations (the `writeConversation` shape plus a final `finished` status)
 * straight to the stream: events placed without re-validation (the first conversation is
 * validated), each conversation's commits in order with optimistic concurrency, many
 * conversations at once. Returns the number of commits.
 */
async function writeStore(log: EventLog, conversations: number, eventsEach: number, parallel = 256): Promise<number> {
  const js = jetstream(log.nc, { timeout: 60_000 });
  let next = 0;
  let commits = 0;
  const writeOne = async (index: number): Promise<void> => {
    const ref = { tenant: 'bench', conversation: `c${index}` };
    const finish = draftEvent({ ...ref, source: 'system' }, 'state_change', {
      status: 'finished',
      reason: 'benchmark fixture',
    });
    let streamSeq = 0;
    let lastSeq = 0;
    for (const drafts of [...conversationCommits(ref, eventsEach - 4), [finish]]) {
      const events =
        index === 0
          ? placeEvents(ref, drafts, lastSeq)
          : drafts.map((draft, offset) => ({ ...draft, seq: lastSeq + 1 + offset }) as Event);
      const id = newId();
      const encoded = encodeCommit(id, ref, events);
      const ack = await js.publish(log.subject(ref), encoded.data, {
        headers: encoded.headers,
        msgID: id,
        expect: { lastSubjectSequence: streamSeq },
      });
      streamSeq = ack.seq;
      lastSeq += events.length;
      commits += 1;
    }
  };
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < conversations) await writeOne(next++);
    }),
  );
  return commits;
}
