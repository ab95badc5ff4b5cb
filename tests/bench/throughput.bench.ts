import { availableParallelism } from 'node:os';
import { PARTITIONED_GROUPS, PARTITIONS, partitionPriorities } from '@flotilla/bus';
import { startTestSystem, type RunningTestSystem, type SystemOptions } from '../support/system.js';
import { commitTimeline, cycleHops, stepCycleTimes } from './commit-timeline.js';
import { sumByLabel, cpuSeconds } from './process-stats.js';
import { FIRST_CYCLES_LEFT_OUT, ms, percentile, table, warmupConversations } from './stats.js';

export type Topology = {
  readonly stepWorkers: number;
  readonly toolRunners: number;
  readonly model: 'in-process' | 'server';
  readonly why: string;
};

/**
 * The simulated model runs in each step worker's process (the runtime alone, as in production,
 * where the model runs elsewhere), with one process of each service (what the embedded launcher
 * starts, and what 2 cores call for) and scaled out, which shows what horizontal scaling costs
 * when it adds no cores. Then the model as a local server called through the SDK over HTTP: the
 * SDK's CPU, and the server's on the same two cores.
 */
export const TOPOLOGIES: readonly Topology[] = [
  {
    stepWorkers: 1,
    toolRunners: 1,
    model: 'in-process',
    why: 'one process of each service, as the embedded launcher runs them; the model in the step worker',
  },
  {
    stepWorkers: 2,
    toolRunners: 2,
    model: 'in-process',
    why: 'scaled out on the same cores: what horizontal scaling costs when it adds no CPU; the model in each step worker',
  },
  {
    stepWorkers: 1,
    toolRunners: 1,
    model: 'server',
    why: 'one process of each service; the model a local server called through the SDK over HTTP, on the same cores',
  },
];

export async function benchThroughput(): Promise<string> {
  const sections: string[] = [];
  for (const topology of TOPOLOGIES) sections.push((await throughputRun(topology)).report);
  return sections.join('\n\n');
}

/**
 * Another benchmark's look at the same load (e.g. the sink's lag): more of the system (`system`),
 * `start` called as the window opens and `stop` as it closes (before the services stop), its
 * report printed after the throughput's.
 */
export type ThroughputObserver = {
  readonly system: Pick<SystemOptions, 'pgSinks' | 'databaseUrl'>;
  start(system: RunningTestSystem): void;
  stop(system: RunningTestSystem): Promise<string>;
};

/** A throughput run's figures as numbers (its report prints them), for other benchmarks (peers). */
export type ThroughputFigures = {
  /** The unloaded cycle's p50 (ms) and how many cycles it was taken over. */
  readonly cycleMs: number;
  readonly cycles: number;
  readonly idealPerSecond: number;
  readonly stepsPerSecond: number;
  /** CPU per step in the window (ms), by process: every service's, nats-server's and the bench's. */
  readonly cpuMsPerStep: ReadonlyMap<string, number>;
  /** Messages per step in the window as nats-server counted them (/varz): received from clients, and sent to them. */
  readonly busMessagesPerStep: { readonly in: number; readonly out: number };
  /** How the instances of each partitioned group shared the partitions (partitionPlacement), when a group had several. */
  readonly placement: string | undefined;
};

/** The load of a throughput run, and the unloaded cycle measured before it. */
export type ThroughputLoad = {
  readonly conversations: number;
  readonly latencyMs: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  /** Cycles of the conversations that warm the processes before the calibrating one (see warmupConversations). */
  readonly warmupCycles: number;
  /** Cycles of the calibrating conversation measured (after its first FIRST_CYCLES_LEFT_OUT). */
  readonly cycles: number;
  /** Each step worker's FLOTILLA_CONCURRENCY (concurrent model calls), when the service's default would cap the load. */
  readonly concurrency?: number;
  /** Settings of every service beside the test system's (which runs them with their own ack wait). */
  readonly serviceEnv?: Readonly<Record<string, string>>;
  /**
   * Generate conversations' titles (default true): each conversation's first commit costs the
   * condenser one model call and the log one commit. The window opens once every conversation has
   * its title (or `titlesWithinMs` after the warm-up, and the report says how many had none).
   */
  readonly titles?: boolean;
};

export const THROUGHPUT_LOAD: ThroughputLoad = {
  conversations: 500,
  latencyMs: 1_000,
  warmupMs: 10_000,
  windowMs: 30_000,
  warmupCycles: 0,
  cycles: 30,
};

/**
 * Steps per second of many concurrent conversations against a model with a fixed latency, over a
 * fixed window after warm-up, against the LLM-bound ideal: every conversation steps once per
 * (model latency + unloaded step-cycle time), the latter measured in the same run (one
 * conversation's `cycles`, after `warmupCycles` in earlier ones).
 */
export async function throughputRun(
  topology: Topology,
  observer?: ThroughputObserver,
  load: ThroughputLoad = THROUGHPUT_LOAD,
): Promise<{ report: string; figures: ThroughputFigures }> {
  const { conversations, latencyMs, warmupMs, windowMs } = load;
  const { stepWorkers, toolRunners, model } = topology;
  // a condenser too, as the launcher runs one: woken by the step workers for each conversation's title (none here asks it to condense)
  await using system = await startTestSystem({
    stepWorkers,
    toolRunners,
    projectors: 1,
    condensers: 1,
    model,
    ackWait: 'services',
    agent: { condenser: { maxEvents: 100_000 }, ...(load.titles === false ? { titles: { generate: false } } : {}) },
    natsMonitor: true,
    ...(load.serviceEnv === undefined ? {} : { env: load.serviceEnv }),
    ...(load.concurrency === undefined ? {} : { stepWorkerEnv: { FLOTILLA_CONCURRENCY: String(load.concurrency) } }),
    ...observer?.system,
  });
  const varz = async (): Promise<{ in_msgs: number; out_msgs: number }> =>
    (await (await fetch(`${system.natsMonitorUrl!}/varz`)).json()) as { in_msgs: number; out_msgs: number };

  // unloaded cycle time with a zero-latency model (what a step costs besides the model)
  for (const [index, steps] of warmupConversations(load.warmupCycles).entries()) {
    const warmup = { tenant: 'bench', conversation: `warmup-${index}` };
    await system.start(warmup, { id: warmup.conversation, steps, tool: 'think' });
    await system.waitForStatus([warmup], ['finished', 'error', 'stuck'], 60_000);
  }
  const probe = { tenant: 'bench', conversation: 'calibrate' };
  await system.start(probe, { id: 'calibrate', steps: FIRST_CYCLES_LEFT_OUT + load.cycles + 1, tool: 'think' });
  await system.waitForStatus([probe], ['finished', 'error', 'stuck'], 60_000);
  const cycles = stepCycleTimes(await commitTimeline(system.log, probe)).slice(FIRST_CYCLES_LEFT_OUT);
  const cycle = percentile(cycles, 50);
  const ideal = conversations / ((latencyMs + cycle) / 1_000);

  const refs = Array.from({ length: conversations }, (_, index) => ({
    tenant: 'bench',
    conversation: `load-${index}`,
  }));
  await Promise.all(
    refs.map((ref) => system.start(ref, { id: ref.conversation, steps: 10_000, latencyMs, tool: 'think' })),
  );
  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  // the titles are a burst at the conversations' start, which the window (steps in steady state) is not about
  const started = warmupConversations(load.warmupCycles).length + 1 + refs.length;
  const untitled = load.titles === false ? 0 : await untitledAfter(system, started, TITLES_WITHIN_MS);

  const pids = new Map<string, number>([
    ['nats-server', system.nats.pid!],
    ...system.processes.map((child): [string, number] => [child.name, child.pid!]),
  ]);
  const outcomes = async (): Promise<Map<string, Map<string, number>>> =>
    new Map(
      await Promise.all(
        [...system.healthUrls].map(async ([name, url]): Promise<[string, Map<string, number>]> => [
          name,
          await sumByLabel(`${url}/metrics`, 'flotilla_commits_handled_total', 'outcome'),
        ]),
      ),
    );
  const windowStart = Date.now();
  const cpuBefore = await Promise.all([...pids.values()].map(cpuSeconds));
  const benchBefore = process.cpuUsage();
  const handledBefore = await outcomes();
  const busBefore = await varz();
  observer?.start(system);
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const windowEnd = Date.now();
  const busAfter = await varz();
  const cpuAfter = await Promise.all([...pids.values()].map(cpuSeconds));
  const bench = process.cpuUsage(benchBefore);
  const handledAfter = await outcomes();
  const observed = await observer?.stop(system);
  const placement = await partitionPlacement(system.natsMonitorUrl!);
  await Promise.all(system.processes.map((child) => child.stop()));

  const brainCalls = system.brain.calls.filter(
    (call) =>
      call.completed && call.closedAt !== undefined && call.closedAt >= windowStart && call.closedAt < windowEnd,
  ).length;
  let steps = 0;
  const modelCalls: number[] = [];
  for (const ref of refs) {
    for (const event of await system.events(ref)) {
      const at = Date.parse(event.timestamp);
      if (event.type === 'llm_usage' && event.purpose === 'step' && at >= windowStart && at < windowEnd) {
        steps += 1;
        modelCalls.push(event.latency_ms);
      }
    }
  }
  // where a cycle's time goes under load: its hops, in a sample of the conversations, in the window
  const sampled = new Map<string, number[]>();
  for (const ref of refs.slice(0, 50)) {
    const inWindow = (await commitTimeline(system.log, ref)).filter(
      (commit) => commit.storedAtMs >= windowStart && commit.storedAtMs < windowEnd,
    );
    for (const [hop, times] of cycleHops(inWindow)) sampled.set(hop, [...(sampled.get(hop) ?? []), ...times]);
  }
  const hopRows = [
    ['a cycle under load (50 conversations)', 'p50', 'p90', 'n'],
    ...[...sampled].map(([hop, times]) => [
      hop,
      ms(percentile(times, 50)),
      ms(percentile(times, 90)),
      String(times.length),
    ]),
    [
      '  of which the model call, as the step worker timed it (all conversations)',
      ms(percentile(modelCalls, 50)),
      ms(percentile(modelCalls, 90)),
      String(modelCalls.length),
    ],
    [
      `  the last hop less the model's ${latencyMs} ms`,
      ms(percentile([...sampled.values()].at(-1)!, 50) - latencyMs),
      ms(percentile([...sampled.values()].at(-1)!, 90) - latencyMs),
      '',
    ],
  ];
  const seconds = (windowEnd - windowStart) / 1_000;
  const percent = (value: number): string => `${((100 * value) / ideal).toFixed(1)} %`;
  const rows = [
    ['steps/s', 'value', 'of ideal'],
    [
      `LLM-bound ideal = ${conversations} / (${latencyMs} ms + ${cycle.toFixed(1)} ms unloaded cycle)`,
      ideal.toFixed(1),
      '100 %',
    ],
    [
      `achieved: llm_usage(step) events in the ${seconds.toFixed(0)} s window`,
      (steps / seconds).toFixed(1),
      percent(steps / seconds),
    ],
    ...(model === 'server'
      ? [
          [
            'achieved: model calls completed in the window',
            (brainCalls / seconds).toFixed(1),
            percent(brainCalls / seconds),
          ],
        ]
      : []),
  ];
  const cpu = [...cpuAfter.map((after, index) => after - cpuBefore[index]!), (bench.user + bench.system) / 1e6];
  const cpuRows = [
    ['CPU in the window', ...pids.keys(), model === 'server' ? 'bench (brain)' : 'bench', 'all'],
    [
      '% of one core',
      ...cpu.map((used) => `${((100 * used) / seconds).toFixed(0)} %`),
      `${((100 * cpu.reduce((a, b) => a + b, 0)) / seconds).toFixed(0)} %`,
    ],
    [
      'ms per step',
      ...cpu.map((used) => ((1_000 * used) / steps).toFixed(2)),
      ((1_000 * cpu.reduce((a, b) => a + b, 0)) / steps).toFixed(2),
    ],
  ];
  const handledRows = [['commits handled/s in the window', 'by outcome']];
  for (const [name, after] of handledAfter) {
    const before = handledBefore.get(name) ?? new Map<string, number>();
    const rates = [...after].map(
      ([outcome, count]) => `${outcome} ${((count - (before.get(outcome) ?? 0)) / seconds).toFixed(1)}`,
    );
    handledRows.push([name, rates.join(', ')]);
  }
  const labels = [...pids.keys(), 'bench'];
  const figures: ThroughputFigures = {
    cycleMs: cycle,
    cycles: cycles.length,
    idealPerSecond: ideal,
    stepsPerSecond: steps / seconds,
    cpuMsPerStep: new Map(cpu.map((used, index) => [labels[index]!, (1_000 * used) / steps])),
    busMessagesPerStep: {
      in: (busAfter.in_msgs - busBefore.in_msgs) / steps,
      out: (busAfter.out_msgs - busBefore.out_msgs) / steps,
    },
    placement,
  };
  const report = [
    `Throughput, ${conversations} concurrent conversations, ${latencyMs} ms model latency, think tool; ${stepWorkers} step worker(s), ${toolRunners} tool runner(s), 1 projector, 1 condenser: ${topology.why}; ${warmupMs / 1_000} s warm-up${load.titles === false ? '' : ', then until every conversation has its title'} (goal: >= 90 % of ideal)`,
    ...(untitled > 0 ? [`${untitled} conversation(s) still had no title when the window opened`] : []),
    table(rows),
    `unloaded cycle (the same model without its latency, one conversation, p50): ${ms(cycle)}`,
    '',
    table(hopRows),
    '',
    table(cpuRows),
    // the CPU a step may cost across all processes for 90 % of the ideal on this machine's cores
    `CPU budget per step at 90 % of ideal on ${availableParallelism()} cores: ${((1_000 * availableParallelism()) / (0.9 * ideal)).toFixed(2)} ms`,
    `bus messages per step, as nats-server counted them (/varz): ${figures.busMessagesPerStep.in.toFixed(1)} in (publishes, acks, pulls, gets, KV puts), ${figures.busMessagesPerStep.out.toFixed(1)} out (deliveries, answers)`,
    ...(placement === undefined ? [] : [`partitions: ${placement}`]),
    '',
    table(handledRows),
    ...(observed === undefined ? [] : ['', observed]),
  ].join('\n');
  return { report, figures };
}

/** How long the window waits, after the warm-up, for the conversations' titles. */
const TITLES_WITHIN_MS = 60_000;

/**
 * Waits until the condensers have titled `conversations` conversations (or failed to), at most
 * `withinMs`: how many were left.
 */
async function untitledAfter(system: RunningTestSystem, conversations: number, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    let titled = 0;
    for (const [name, url] of system.healthUrls) {
      if (!name.startsWith('condenser')) continue;
      const outcomes = await sumByLabel(`${url}/metrics`, 'flotilla_commits_handled_total', 'outcome');
      titled += (outcomes.get('titled') ?? 0) + (outcomes.get('title_failed') ?? 0);
    }
    if (titled >= conversations || Date.now() >= deadline) return Math.max(0, conversations - titled);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * How each partitioned group's instances (their connections' names on nats-server are their
 * instance ids) share the partitions: how many each owns (priority 0) when they rank themselves
 * among each other (partitionPriorities), as they do once each has heard the others announce
 * themselves. Undefined when no group has several instances.
 */
async function partitionPlacement(monitorUrl: string): Promise<string | undefined> {
  const connz = (await (await fetch(`${monitorUrl}/connz?limit=4096`)).json()) as {
    connections?: { name?: string }[];
  };
  const names = new Set((connz.connections ?? []).map((connection) => connection.name ?? ''));
  const groups = PARTITIONED_GROUPS.flatMap((group) => {
    const instances = [...names].filter((name) => name.startsWith(`${group}-`));
    if (instances.length < 2) return [];
    const owned = instances.map(
      (instance) => partitionPriorities(instance, instances).filter((priority) => priority === 0).length,
    );
    return [`${group} ${instances.length} instances owning ${owned.join(' + ')} of ${PARTITIONS}`];
  });
  return groups.length === 0 ? undefined : groups.join('; ');
}
