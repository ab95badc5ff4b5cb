import { THROUGHPUT_LOAD, throughputRun, TOPOLOGIES, type ThroughputFigures } from './throughput.bench.js';
import { table } from './stats.js';

/** One offered load: as many conversations, each stepping once per model latency. */
type ScaleLoad = { readonly conversations: number; readonly latencyMs: number };

/**
 * The same offered load (about 300 steps/s) carried by more and more live conversations, each
 * waiting longer on its model: 300 × 1 s, 3,000 × 10 s, and with `big`, 10,000 × 30 s.
 */
export const SCALE_LOADS: readonly ScaleLoad[] = [
  { conversations: 300, latencyMs: 1_000 },
  { conversations: 3_000, latencyMs: 10_000 },
];
export const BIG_SCALE_LOAD: ScaleLoad = { conversations: 10_000, latencyMs: 30_000 };

/** Goal: CPU per step within this of the first load's, and at least 95 % of the model-bound ideal in each. */
const GOAL_RATIO = 1.2;

/**
 * Is a step's cost independent of how many conversations are live (docs/architecture.md, "The
 * bus")? The `throughput` benchmark's run, one process of each service, at each load of
 * SCALE_LOADS: the step worker's concurrency sized to the conversations (so concurrent model calls
 * are not the cap), titles off (each is one model call at a conversation's start, not a step's
 * cost), the services' production ack wait, warmed up for two model latencies after every
 * conversation started, then a 30 s window. CPU per step of every process against the
 * first load's, nats-server's share apart, and the bus messages per step nats-server counted.
 */
export async function benchConversationScale(big = false): Promise<string> {
  const loads = big ? [...SCALE_LOADS, BIG_SCALE_LOAD] : SCALE_LOADS;
  const runs: { load: ScaleLoad; figures: ThroughputFigures; report: string }[] = [];
  for (const load of loads) {
    const { report, figures } = await throughputRun(TOPOLOGIES[0]!, undefined, {
      ...THROUGHPUT_LOAD,
      conversations: load.conversations,
      latencyMs: load.latencyMs,
      warmupMs: Math.max(THROUGHPUT_LOAD.warmupMs, 2 * load.latencyMs),
      // FLOTILLA_CONCURRENCY takes at most 10,000: enough for 10,000 conversations whose cycles are a fraction of their model latency
      concurrency: Math.min(10_000, load.conversations + 64),
      // a title is one model call per conversation, made at its start: thousands of conversations
      // started at once would still be titled in the window, which measures steps
      titles: false,
    });
    runs.push({ load, figures, report });
  }
  const total = (figures: ThroughputFigures): number =>
    [...figures.cpuMsPerStep.values()].reduce((sum, ms) => sum + ms, 0);
  const nats = (figures: ThroughputFigures): number => figures.cpuMsPerStep.get('nats-server') ?? 0;
  const baseline = runs[0]!.figures;
  const rows = [
    [
      'conversations x model latency',
      'steps/s',
      'of ideal',
      'CPU per step',
      'ratio',
      'of it nats-server',
      'ratio',
      'bus messages per step (in / out)',
    ],
    ...runs.map(({ load, figures }) => [
      `${load.conversations.toLocaleString('en')} x ${load.latencyMs / 1_000} s`,
      figures.stepsPerSecond.toFixed(1),
      `${((100 * figures.stepsPerSecond) / figures.idealPerSecond).toFixed(1)} %`,
      `${total(figures).toFixed(2)} ms`,
      `${(total(figures) / total(baseline)).toFixed(2)}x`,
      `${nats(figures).toFixed(2)} ms`,
      `${(nats(figures) / nats(baseline)).toFixed(2)}x`,
      `${figures.busMessagesPerStep.in.toFixed(1)} / ${figures.busMessagesPerStep.out.toFixed(1)}`,
    ]),
  ];
  return [
    `Conversation scale: the same offered load carried by more live conversations, one process of each service (goal: CPU per step within ${GOAL_RATIO}x of the ${baseline.idealPerSecond.toFixed(0)}-steps/s run at ${runs[0]!.load.conversations} conversations, >= 95 % of ideal in each)`,
    table(rows),
    '',
    ...runs.map(({ report }) => report),
  ].join('\n');
}
