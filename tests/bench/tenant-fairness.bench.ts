import type { ConversationRef } from '@flotilla/log';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { readFile } from 'node:fs/promises';
import { cpuSeconds } from './process-stats.js';
import { stepWaitParts, stepWaits } from './step-waits.js';
import { ms, percentile, ratio, table } from './stats.js';

export type FairnessSettings = {
  /** Tenant A's flood: conversations started at once, each stepping until the run ends. */
  readonly flood: number;
  /** Tenant B: conversations, and the steps each makes. */
  readonly conversations: number;
  readonly steps: number;
  /** The model's fixed latency per call. */
  readonly latencyMs: number;
  /** The step worker's concurrent steps (FLOTILLA_CONCURRENCY): the group's capacity is concurrency / latency steps per second. */
  readonly concurrency: number;
  /** How long the flood runs before tenant B starts (its backlog builds up). */
  readonly floodLeadMs: number;
  /** Run the step worker and the tool runner without a lookahead (FLOTILLA_LOOKAHEAD=0): commits served in delivery order, as before fair scheduling. */
  readonly deliveryOrder?: boolean;
  /** The step worker's FLOTILLA_FAIR_RESERVE (default: the service's, a tenth of the slots). */
  readonly fairReserve?: number;
};

export const FAIRNESS_DEFAULTS: FairnessSettings = {
  flood: 2_000,
  conversations: 20,
  steps: 10,
  latencyMs: 2_000,
  concurrency: 100,
  floodLeadMs: 10_000,
};

/** Goal: B's step wait p50 and p99 under A's flood within this of B's alone. */
const GOAL_RATIO = 1.5;

/**
 * Tenant fairness (issue 34, item 4): tenant A floods the step workers' group with `flood`
 * conversations while tenant B runs `conversations`; B's step waits (stepWaits: from the commit
 * that made a step owed to the step's commit, less its model call) against B's alone, measured
 * first on the same system in the same run.
 *
 * One process of each service, the model in the step worker (a fixed latency per call, the think
 * tool). The step worker's concurrency is set so that A's flood asks for more steps than the group
 * can run at once (2,000 conversations against 100 concurrent 2 s model calls: a backlog of ~1,900
 * owed steps) while the machine's CPU is not the bound (50 steps/s, a sixth of a core at ~3 ms of
 * CPU per step over all processes, on two cores shared with other work): the queue is the
 * group's, which is what fairness is about. B's 20 conversations need 20 of the 100 slots. Titles off (a model call at
 * each conversation's start), the services' own ack wait (30 s).
 */
export async function benchTenantFairness(settings: FairnessSettings = FAIRNESS_DEFAULTS): Promise<string> {
  const { flood, conversations, steps, latencyMs, concurrency, floodLeadMs } = settings;
  await using system = await startTestSystem({
    stepWorkers: 1,
    toolRunners: 1,
    projectors: 1,
    model: 'in-process',
    agent: { condenser: { maxEvents: 100_000 }, titles: { generate: false } },
    ackWait: 'services',
    stepWorkerEnv: {
      FLOTILLA_CONCURRENCY: String(concurrency),
      ...(settings.deliveryOrder ? { FLOTILLA_LOOKAHEAD: '0' } : {}),
      ...(settings.fairReserve === undefined ? {} : { FLOTILLA_FAIR_RESERVE: String(settings.fairReserve) }),
    },
    ...(settings.deliveryOrder ? { toolRunnerEnv: { FLOTILLA_LOOKAHEAD: '0' } } : {}),
  });
  // warm the processes' code before anything is measured
  await runTenant(system, 'warmup', 'w', conversations, 20, 0);

  const aloneStats = await phaseStats(system);
  const alone = await runTenant(system, 'tenant-b', 'alone', conversations, steps, latencyMs);
  const aloneLoad = await aloneStats();

  const floodRefs = Array.from({ length: flood }, (_, index) => ({
    tenant: 'tenant-a',
    conversation: `flood-${index}`,
  }));
  const floodStart = Date.now();
  for (let at = 0; at < floodRefs.length; at += 100) {
    await Promise.all(
      floodRefs
        .slice(at, at + 100)
        .map((ref) => system.start(ref, { id: ref.conversation, steps: 100_000, latencyMs, tool: 'think' })),
    );
  }
  const floodStarted = Date.now() - floodStart;
  await new Promise((resolve) => setTimeout(resolve, floodLeadMs));
  const sharedStats = await phaseStats(system);
  // served in delivery order each of B's steps waits behind the flood's whole backlog (tens of seconds): fewer of them
  const sharedSteps = settings.deliveryOrder ? Math.min(steps, 2) : steps;
  const shared = await runTenant(system, 'tenant-b', 'flooded', conversations, sharedSteps, latencyMs);
  const sharedLoad = await sharedStats();
  await Promise.all(system.processes.map((child) => child.stop()));

  // A's own steps while B ran, for comparison: a sample of its conversations
  const floodWaits: number[] = [];
  let floodSteps = 0;
  for (const ref of floodRefs.slice(0, 200)) {
    const waits = await stepWaits(system.log, ref);
    floodSteps += waits.length;
    floodWaits.push(...waits);
  }

  const row = (name: string, waits: readonly number[]): string[] => [
    name,
    String(waits.length),
    ms(percentile(waits, 50)),
    ms(percentile(waits, 90)),
    ms(percentile(waits, 99)),
  ];
  const p50 = (waits: readonly number[]): number => percentile(waits, 50);
  const p99 = (waits: readonly number[]): number => percentile(waits, 99);
  return [
    `Tenant fairness${settings.deliveryOrder ? ' (no lookahead: commits served in delivery order)' : ''}${settings.fairReserve === undefined ? '' : ` (FLOTILLA_FAIR_RESERVE=${settings.fairReserve})`}: tenant B's ${conversations} conversations x ${steps} steps alone, then while tenant A floods ${flood.toLocaleString('en')} conversations (started in ${(floodStarted / 1_000).toFixed(1)} s, B ${floodLeadMs / 1_000} s after); ${latencyMs} ms model, think tool; one process of each service, the step worker's concurrency ${concurrency} (capacity ${((1_000 * concurrency) / latencyMs).toFixed(0)} steps/s) (goal: B's p50 and p99 <= ${GOAL_RATIO}x alone)`,
    'step wait: from the commit that made a step owed being stored to the step commit being stored, less the model call as the step worker timed it',
    table([
      ['step waits', 'n', 'p50', 'p90', 'p99'],
      row('tenant B alone', alone),
      row(`tenant B under A's flood${sharedSteps === steps ? '' : ` (${sharedSteps} steps each)`}`, shared),
      row(`tenant A, the steps done (200 of its conversations)`, floodWaits),
    ]),
    '',
    table([
      ['B flooded / B alone', 'ratio'],
      ['p50', ratio(p50(shared), p50(alone))],
      ['p99', ratio(p99(shared), p99(alone))],
    ]),
    `tenant A's steps in the sample: ${floodSteps}`,
    '',
    table([
      ["tenant B's step wait split where its model call was (event timestamps: ms)", 'p50', 'p90', 'p99'],
      [
        'alone: commit owing the step -> model call starts (delivery, slot, load, view)',
        ...[50, 90, 99].map((p) => ms(percentile(alone.before, p))),
      ],
      [
        'alone: model call ends -> step commit stored (the append)',
        ...[50, 90, 99].map((p) => ms(percentile(alone.after, p))),
      ],
      [
        'flooded: commit owing the step -> model call starts',
        ...[50, 90, 99].map((p) => ms(percentile(shared.before, p))),
      ],
      ['flooded: model call ends -> step commit stored', ...[50, 90, 99].map((p) => ms(percentile(shared.after, p)))],
    ]),
    '',
    "while B ran: the step worker's event-loop delay (its p50 / p99 over the phase), CPU of each process (% of one core), the machine's 1-minute load average at the end (other work on the machine included):",
    `  alone:   ${aloneLoad}`,
    `  flooded: ${sharedLoad}`,
  ].join('\n');
}

type Waits = number[] & { readonly before: number[]; readonly after: number[] };

/** Starts a tenant's conversations at once, waits for them to finish, and returns their step waits (and their parts: before the model call, after it). */
async function runTenant(
  system: RunningTestSystem,
  tenant: string,
  name: string,
  conversations: number,
  steps: number,
  latencyMs: number,
): Promise<Waits> {
  const refs: ConversationRef[] = Array.from({ length: conversations }, (_, index) => ({
    tenant,
    conversation: `${name}-${index}`,
  }));
  await Promise.all(refs.map((ref) => system.start(ref, { id: ref.conversation, steps, latencyMs, tool: 'think' })));
  await system.waitForStatus(refs, ['finished', 'error', 'stuck'], 600_000);
  const waits = Object.assign([] as number[], { before: [] as number[], after: [] as number[] });
  for (const ref of refs) {
    for (const part of await stepWaitParts(system.log, ref)) {
      waits.push(part.wait);
      waits.before.push(part.before);
      waits.after.push(part.after);
    }
  }
  return waits;
}

/** Starts measuring a phase: the returned function ends it and describes the step worker's event-loop delay, the processes' CPU and the machine's load. */
async function phaseStats(system: RunningTestSystem): Promise<() => Promise<string>> {
  const pids = new Map<string, number>([
    ['nats-server', system.nats.pid!],
    ...system.processes.map((child): [string, number] => [child.name, child.pid!]),
  ]);
  const worker = system.healthUrls.get('step-worker-1')!;
  // prom-client's event-loop delay histogram is reset at each scrape: this one starts the phase's
  const slotWaitsBefore = slotWaits(await fetch(`${worker}/metrics`).then((response) => response.text()));
  const started = performance.now();
  const before = await Promise.all([...pids.values()].map(cpuSeconds));
  return async () => {
    const seconds = (performance.now() - started) / 1_000;
    const after = await Promise.all([...pids.values()].map(cpuSeconds));
    const metrics = await (await fetch(`${worker}/metrics`)).text();
    const gauge = (name: string): string =>
      `${(1_000 * Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN)).toFixed(1)} ms`;
    const cpu = [...pids.keys()]
      .map((name, index) => `${name} ${((100 * (after[index]! - before[index]!)) / seconds).toFixed(0)} %`)
      .join(', ');
    const load = (await readFile('/proc/loadavg', 'utf8')).split(' ')[0]!;
    const slotWaitsAfter = slotWaits(metrics);
    const waits = [...slotWaitsAfter].map(([key, count]) => [key, count - (slotWaitsBefore.get(key) ?? 0)] as const);
    const shares = ['within', 'over'].map((share) => {
      const buckets = waits.filter(([key]) => key.startsWith(`${share} `));
      const total = buckets.find(([key]) => key.endsWith('+Inf'))?.[1] ?? 0;
      const at = (le: string): string =>
        total === 0
          ? '-'
          : `${((100 * (buckets.find(([key]) => key === `${share} ${le}`)?.[1] ?? 0)) / total).toFixed(0)} %`;
      return `${share} share ${total} (<= 1 ms ${at('0.001')}, <= 10 ms ${at('0.01')}, <= 100 ms ${at('0.1')})`;
    });
    return `slot waits in the step worker: ${shares.join('; ')}; event loop ${gauge('nodejs_eventloop_lag_p50_seconds')} / ${gauge('nodejs_eventloop_lag_p99_seconds')}; ${cpu}; load ${load} (${seconds.toFixed(0)} s)`;
  };
}

/** The step worker's slot-wait histogram (cumulative bucket counts), keyed `<share> <le>`. */
function slotWaits(metrics: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('flotilla_slot_wait_seconds_bucket{')) continue;
    const le = /le="([^"]*)"/.exec(line)?.[1];
    const share = /share="([^"]*)"/.exec(line)?.[1];
    if (le !== undefined && share !== undefined)
      counts.set(`${share} ${le}`, Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return counts;
}
