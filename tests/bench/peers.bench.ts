import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDatabaseAdminUrl } from '@flotilla/pg-sink/testing';
import pg from 'pg';
import type { PeerFigures, PeerOptions } from './peers/figures.js';
import { eachFloor, FLOORS, floorTitle, type FloorName } from './peers/floor-messages.js';
import { runPeer, type PeerName } from './peers/run-peer.js';
import { FIRST_CYCLES_LEFT_OUT, ms, ratio, table } from './stats.js';
import { throughputRun, TOPOLOGIES, type ThroughputFigures } from './throughput.bench.js';

export type PeersSettings = {
  readonly conversations: number;
  readonly latencyMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  /** Cycles of one conversation measured (after WARMUP_CYCLES in earlier ones), zero-latency model. */
  readonly cycles: number;
  readonly peers: readonly PeerName[];
};

const DEFAULTS: PeersSettings = {
  conversations: 500,
  latencyMs: 1_000,
  warmupMs: 10_000,
  windowMs: 30_000,
  cycles: 200,
  peers: ['dbos', 'langgraph', 'restate', ...(Object.keys(FLOORS) as FloorName[])],
};
/**
 * Cycles run before the cycle's conversation, on every system, in conversations of their own
 * (warmupConversations): a process's code runs unoptimized at first, and Flotilla's cycle crosses
 * five processes, whose cycle kept getting shorter for ~1,000 cycles. A running service is warm.
 */
const WARMUP_CYCLES = 1_200;

type PeerDescription = {
  readonly title: string;
  readonly packages: readonly string[];
  readonly database: boolean;
  readonly floor?: true;
};
const PEERS: Record<PeerName, PeerDescription> = {
  dbos: { title: 'DBOS', packages: ['@dbos-inc/dbos-sdk'], database: true },
  langgraph: {
    title: 'LangGraph.js',
    packages: ['@langchain/langgraph', '@langchain/langgraph-checkpoint-postgres'],
    database: true,
  },
  restate: { title: 'Restate', packages: ['@restatedev/restate-sdk', '@restatedev/restate-server'], database: false },
  // not peers but the bus traffic of Flotilla's design alone (peers/floor-peer.ts), left out of "best peer"
  ...eachFloor((spec) => ({ title: floorTitle(spec), packages: ['@nats-io/jetstream'], database: false, floor: true })),
};

/**
 * Flotilla beside its peers (issue 22), the same loop everywhere: a scripted model decides one
 * tool call, a no-op tool runs, its result is made durable, the next model call follows. The
 * peers run model and tool in their one process (tests/bench/peers/): DBOS and LangGraph.js with
 * its Postgres checkpointer on the machine's PostgreSQL (a database each, dropped after), Restate
 * with its server in a network namespace of its own (loopback only: it looks up its latest release
 * at start). Flotilla runs the throughput benchmark's own code (`throughputRun`): one process of
 * each service with the model in the step worker, then 2 step workers + 2 tool runners.
 *
 * Per system: the cycle's p50 (one conversation, zero-latency model); under load (500
 * conversations, 1 s model) the CPU per step of every process involved (for the peers: theirs,
 * and PostgreSQL's backends and server processes, or the Restate server) and the steps done against
 * the model-bound ideal; then Flotilla over the best peer; then what each wrote per step.
 */
export async function benchPeers(only?: readonly string[]): Promise<string> {
  const unknown = (only ?? []).filter((name) => !Object.hasOwn(PEERS, name));
  if (unknown.length > 0)
    throw new Error(`unknown peers ${unknown.join(', ')}; known: ${Object.keys(PEERS).join(', ')}`);
  const settings = only === undefined ? DEFAULTS : { ...DEFAULTS, peers: only as readonly PeerName[] };
  const { conversations, latencyMs, warmupMs, windowMs, cycles } = settings;
  const loadAverage = (await readFile('/proc/loadavg', 'utf8')).split(' ')[0]!;
  const flotilla: [string, ThroughputFigures][] = [];
  for (const [topology, title] of [
    [TOPOLOGIES[0]!, 'Flotilla, one process of each service'],
    [TOPOLOGIES[1]!, 'Flotilla, 2 step workers + 2 tool runners'],
  ] as const) {
    const { figures } = await throughputRun(topology, undefined, {
      conversations,
      latencyMs,
      warmupMs,
      windowMs,
      warmupCycles: WARMUP_CYCLES,
      cycles,
    });
    flotilla.push([title, figures]);
  }

  const adminUrl = await testDatabaseAdminUrl();
  const scratchDir = await mkdtemp(join(tmpdir(), 'peers-'));
  const peers: [PeerName, PeerFigures][] = [];
  try {
    for (const peer of settings.peers) {
      const options: PeerOptions = {
        cycles,
        warmupCycles: WARMUP_CYCLES,
        conversations,
        latencyMs,
        warmupMs,
        windowMs,
        scratchDir,
      };
      if (!PEERS[peer].database) {
        // Restate's server looks up its latest release at start: a network of its own, loopback only
        peers.push([peer, await runPeer(peer, options, peer === 'restate')]);
        continue;
      }
      const database = await createDatabase(adminUrl, `flotilla_bench_${peer}`);
      try {
        peers.push([peer, await runPeer(peer, { ...options, databaseUrl: database.url }, false)]);
      } finally {
        await database.drop();
      }
    }
  } finally {
    await rm(scratchDir, { recursive: true, force: true });
  }
  return report(
    settings,
    flotilla,
    peers,
    `${await postgresVersion(adminUrl)}; 1-minute load average at the start ${loadAverage}`,
  );
}

function report(
  settings: PeersSettings,
  flotilla: readonly [string, ThroughputFigures][],
  peers: readonly [PeerName, PeerFigures][],
  postgres: string,
): string {
  const { conversations, latencyMs, warmupMs, windowMs, cycles } = settings;
  const sum = (values: Iterable<number>): number => [...values].reduce((total, value) => total + value, 0);
  type Row = {
    readonly name: string;
    readonly title: string;
    readonly cycle: number;
    readonly cycles: number;
    readonly cpuMsPerStep: number;
    readonly stepsPerSecond: number;
    readonly ofIdeal: number;
    readonly cpu: string;
    readonly peer?: PeerName;
  };
  const flotillaRows: Row[] = flotilla.map(([title, figures]) => ({
    name: title.replace('Flotilla, ', ''),
    title,
    cycle: figures.cycleMs,
    cycles: figures.cycles,
    cpuMsPerStep: sum(figures.cpuMsPerStep.values()),
    stepsPerSecond: figures.stepsPerSecond,
    ofIdeal: figures.stepsPerSecond / figures.idealPerSecond,
    cpu: [
      [...figures.cpuMsPerStep].map(([name, used]) => `${name} ${used.toFixed(2)}`).join(', '),
      ...(figures.placement === undefined ? [] : [` (partitions: ${figures.placement})`]),
    ].join(''),
  }));
  const peerRows: Row[] = peers.map(([peer, figures]) => {
    const cpu = figures.load.cpuSeconds;
    return {
      name: PEERS[peer].title,
      title: `${PEERS[peer].title} (${PEERS[peer].packages.map(version).join(', ')})`,
      peer,
      cycle: figures.cycle.p50,
      cycles: figures.cycle.n,
      cpuMsPerStep: (1_000 * sum(Object.values(cpu))) / figures.load.steps,
      stepsPerSecond: figures.load.steps / (figures.load.windowMs / 1_000),
      ofIdeal: figures.load.steps / figures.load.idealSteps,
      cpu: Object.entries(cpu)
        .map(([name, seconds]) => {
          const { counted, gone } = figures.load.processes[name]!;
          const processes =
            counted > 1 ? ` (${counted} processes${gone > 0 ? `, ${gone} gone in the window, not counted` : ''})` : '';
          return `${name}${processes} ${((1_000 * seconds) / figures.load.steps).toFixed(2)}`;
        })
        .join(', '),
    };
  });
  const rows = [...flotillaRows, ...peerRows];
  const percent = (value: number): string => `${(100 * value).toFixed(1)} %`;
  const summary = table([
    ['system', 'cycle p50', 'cycles', 'CPU per step, every process', 'steps/s', 'of ideal'],
    ...rows.map((row) => [
      row.title,
      ms(row.cycle),
      String(row.cycles),
      `${row.cpuMsPerStep.toFixed(2)} ms`,
      row.stepsPerSecond.toFixed(1),
      percent(row.ofIdeal),
    ]),
  ]);
  const lines = [
    `Peers: the same loop (a scripted model decides one tool call, a no-op tool runs, its result is made durable, the next model call follows) on each system.`,
    `Cycle: one conversation, zero-latency model, p50 over ${cycles} cycles (its first ${FIRST_CYCLES_LEFT_OUT} left out) after ${WARMUP_CYCLES} in earlier conversations. Load: ${conversations} conversations, ${latencyMs} ms model, ${windowMs / 1_000} s window after ${warmupMs / 1_000} s of warm-up;`,
    `CPU per step of every process involved over the steps done in the window; of ideal: steps done / (conversations x window / (latency + cycle p50)).`,
    `The peers run model and tool in their one process; Flotilla's tool runs in the tool runner's process (one NATS round trip each way). ${postgres}.`,
    `The bus floor is no peer: Flotilla's messages per step (3 commits, each delivered to the step workers', tool runners' and projector's groups but the step workers' and tool runners' own, acked: 6 deliveries; 1 KV snapshot) with none of its code, on a nats-server of its own (peers/floor-peer.ts); "every commit to every group" delivers each to all three (9), as Flotilla did before commits carried their kind; "Flotilla's commits validated" sends Flotilla's own commits (its events and headers), each validated as it is written and as each group reads it (DESIGN.md invariant 8), through its codec; "16 partitions" is the protocol's layout (the stream appends each commit's partition, and the deciders and the runners pull from a consumer per partition in its priority group, pulls prioritized), "one consumer per group" the same commits without it.`,
    summary,
    '',
    'CPU per step in the window (ms), by process:',
    ...rows.map((row) => `  ${row.title}: ${row.cpu}`),
  ];
  const against = (heading: string, rows: readonly Row[]): void => {
    if (rows.length === 0) return;
    const bestCpu = rows.reduce((best, row) => (row.cpuMsPerStep < best.cpuMsPerStep ? row : best));
    const bestCycle = rows.reduce((best, row) => (row.cycle < best.cycle ? row : best));
    lines.push(
      '',
      table([
        [`Flotilla / ${heading}`, 'Flotilla', heading, 'ratio'],
        ...flotillaRows.map((row) => [
          `CPU per step, ${row.name}`,
          `${row.cpuMsPerStep.toFixed(2)} ms`,
          `${bestCpu.cpuMsPerStep.toFixed(2)} ms (${bestCpu.name})`,
          ratio(row.cpuMsPerStep, bestCpu.cpuMsPerStep),
        ]),
        [
          `cycle p50, ${flotillaRows[0]!.name}`,
          ms(flotillaRows[0]!.cycle),
          `${ms(bestCycle.cycle)} (${bestCycle.name})`,
          ratio(flotillaRows[0]!.cycle, bestCycle.cycle),
        ],
      ]),
    );
  };
  against(
    'best peer',
    peerRows.filter((row) => !PEERS[row.peer!].floor),
  );
  // the floor of Flotilla's design: what Flotilla's own code costs beyond its bus traffic
  against(
    'bus floor',
    peerRows.filter((row) => row.peer === 'floor'),
  );
  // what the protocol alone asks of any system on it, against the goals: a floor above a goal's
  // bound shows the goal out of reach of any system that speaks the protocol in this design
  const peersOnly = peerRows.filter((row) => !PEERS[row.peer!].floor);
  // each goal's floor, then the same commits with one consumer per group: what the protocol's partitions cost
  const goals: { floor: FloorName; label: string; factor: number }[] = [
    { floor: 'floor-protocol', label: 'CPU per step, one process of each (goal: <= the best peer)', factor: 1 },
    { floor: 'floor-commits', label: '  the same without partitions', factor: 1 },
    { floor: 'floor-protocol-2x2', label: 'CPU per step, scaled out (goal: <= 1.3x the best peer)', factor: 1.3 },
    { floor: 'floor-commits-2x2', label: '  the same without partitions', factor: 1.3 },
  ];
  const goalRows = goals.flatMap(({ floor: peer, label, factor }) => {
    const floor = peerRows.find((row) => row.peer === peer);
    if (!floor || peersOnly.length === 0) return [];
    const best = peersOnly.reduce((low, row) => (row.cpuMsPerStep < low.cpuMsPerStep ? row : low));
    const bound = best.cpuMsPerStep * factor;
    const above = floor.cpuMsPerStep > bound;
    // only the protocol's own floor, partitioned, can put a goal out of reach
    const verdict = FLOORS[peer].partitioned
      ? above
        ? 'out of reach'
        : 'within reach'
      : above
        ? 'above the bound'
        : 'below the bound';
    return [
      [
        label,
        `${floor.cpuMsPerStep.toFixed(2)} ms`,
        `${bound.toFixed(2)} ms (${factor === 1 ? '' : `${factor}x `}${best.name})`,
        ratio(floor.cpuMsPerStep, bound),
        verdict,
      ],
    ];
  });
  if (goalRows.length > 0)
    lines.push('', table([["The protocol's floor / the goal", 'floor', 'goal', 'ratio', 'the goal'], ...goalRows]));
  lines.push(
    '',
    'Written per step:',
    `  Flotilla: 3 commits (action, execution start, observation), each one JetStream message delivered to the consumer groups that did not write it (step workers, tool runners, projector: 6 deliveries); the condenser is woken through its own queue only when it owes something (here each conversation's title, once or twice); nats-server syncs its files on an interval (sync_interval)`,
  );
  for (const [peer, figures] of peers) {
    lines.push(
      `  ${PEERS[peer].title}, the cycle's conversation:`,
      ...figures.writes.conversation.map((line) => `    ${line}`),
    );
    if (figures.writes.load.length > 0)
      lines.push(
        `  ${PEERS[peer].title}, the whole load run (its start and end included):`,
        ...figures.writes.load.map((line) => `    ${line}`),
      );
  }
  return lines.join('\n');
}

const NODE_MODULES = fileURLToPath(new URL('../../node_modules/', import.meta.url));

/** A package's name without its scope and its installed version (the root's devDependencies pin them). */
function version(name: string): string {
  const { version } = JSON.parse(readFileSync(join(NODE_MODULES, name, 'package.json'), 'utf8')) as { version: string };
  return `${name.split('/').at(-1)} ${version}`;
}

async function postgresVersion(adminUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ server_version: string; synchronous_commit: string }>(
      "SELECT current_setting('server_version') AS server_version, current_setting('synchronous_commit') AS synchronous_commit",
    );
    return `PostgreSQL ${rows[0]!.server_version} (synchronous_commit ${rows[0]!.synchronous_commit})`;
  } finally {
    await client.end();
  }
}

/** A database of the peer's own (dropped first if an earlier run left it). */
async function createDatabase(adminUrl: string, name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
