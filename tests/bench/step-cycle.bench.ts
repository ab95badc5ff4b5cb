import { draftEvent, newId, type EventDraft } from '@flotilla/events';
import { encodeCommit, EventLog, placeEvents, type ConversationRef } from '@flotilla/log';
import { AckPolicy, DeliverPolicy, jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { describePlacement } from './cluster-placement.js';
import { commitTimeline, cycleHops, stepCycleTimes } from './commit-timeline.js';
import { cpuSeconds, sumByLabel, syscalls } from './process-stats.js';
import { ms, percentile, ratio, table } from './stats.js';

/**
 * One step cycle of one conversation (action commit → tool runner → execution_started →
 * observation → step worker → zero-latency model → next action commit), with the real services
 * as processes, against the raw JetStream floor of the same publishes and deliveries done by a
 * bare client on the same server in the same run.
 *
 * Measured twice: with the zero-latency model the goal names (the brain's replies in the step
 * worker's process), then with the brain as a local OpenAI-compatible server called through the
 * SDK, which adds an HTTP round trip and the server's parse of the whole request to each cycle.
 *
 * With `natsNodes` 3 the system runs on a 3-node JetStream cluster (events stream, buckets and
 * the groups' consumers R3, as FLOTILLA_REPLICAS=3 makes them) and the floor on the same cluster,
 * on an R3 stream of its own.
 */
export async function benchStepCycle(
  cycles = 200,
  models: readonly StepModel[] = ['in-process', 'server'],
  warmup = 20,
  natsNodes = 1,
): Promise<string> {
  const where =
    natsNodes > 1 ? `; on a ${natsNodes}-node JetStream cluster, stream, buckets and consumers R${natsNodes}` : '';
  const sections = [
    `Step cycle, one conversation, think tool, ${cycles} cycles after ${warmup} of warm-up; 1 step worker, 1 tool runner, 1 projector${where} (goal: p50 ratio <= 2)`,
  ];
  for (const model of models) {
    sections.push('', MODEL_TITLES[model], await measureCycles(model, cycles, warmup, natsNodes));
  }
  return sections.join('\n');
}

type StepModel = 'in-process' | 'server';

const MODEL_TITLES: Record<StepModel, string> = {
  'in-process': "Zero-latency model (in the step worker's process):",
  server: 'The model as a local server, called through the OpenAI SDK over HTTP:',
};

async function measureCycles(model: StepModel, cycles: number, warmup: number, natsNodes: number): Promise<string> {
  await using system = await startTestSystem({
    stepWorkers: 1,
    toolRunners: 1,
    projectors: 1,
    model,
    natsNodes,
    agent: { condenser: { maxEvents: 100_000 }, limits: { maxIterationsPerRun: warmup + cycles + 10 } },
  });
  // every nats-server: one, or each node of the cluster
  const servers = new Map<string, number>(
    system.cluster
      ? system.cluster.nodes.map((node, index): [string, number] => [`nats n${index + 1}`, node.pid!])
      : [['nats-server', system.nats.pid!]],
  );
  // both floors before and after the runtime's run, alternating
  const floor = await rawFloor(system, [...servers.values()], warmup, cycles / 2, false);
  const sameMessages = await rawFloor(system, [...servers.values()], warmup, cycles / 2, true);

  const ref = { tenant: 'bench', conversation: 'cycle' };
  const pids = new Map<string, number>([
    ...servers,
    ...system.processes.map((child): [string, number] => [child.name, child.pid!]),
  ]);
  await system.start(ref, { id: 'cycle', steps: warmup + cycles + 1, tool: 'think' });
  // CPU from the end of warm-up: lazily loaded modules and JIT compilation are not per cycle
  await waitForActions(system, ref, warmup + 1, 120_000);
  const cpuBefore = await Promise.all([...pids.values()].map(cpuSeconds));
  const callsBefore = await Promise.all([...pids.values()].map(syscalls));
  const outcomesBefore = await handledOutcomes(system);
  const benchBefore = process.cpuUsage();
  const warmedUpAt = (await system.log.tail(ref)).lastSeq;
  await waitForActions(system, ref, warmup + cycles + 1, 300_000);
  const cpuAfter = await Promise.all([...pids.values()].map(cpuSeconds));
  const callsAfter = await Promise.all([...pids.values()].map(syscalls));
  const bench = process.cpuUsage(benchBefore);
  const outcomesAfter = await handledOutcomes(system);
  const warmedUpUntil = (await system.log.tail(ref)).lastSeq;
  // (reading the whole log for the status, as waitForStatus does, is not part of the measurement)
  await system.waitForStatus([ref], ['finished', 'error', 'stuck'], 30_000);
  const status = await system.status(ref);
  if (status !== 'finished') throw new Error(`the conversation ended ${status}, not finished`);
  const events = await system.events(ref);
  const calls = events.filter((event) => event.type === 'llm_usage');
  const total = calls.filter((event) => event.seq > warmedUpAt && event.seq <= warmedUpUntil).length;

  sameMessages.add(await rawFloor(system, [...servers.values()], warmup, cycles / 2, true));
  floor.add(await rawFloor(system, [...servers.values()], warmup, cycles / 2, false));
  const placement = system.cluster
    ? [
        await describePlacement(system.cluster, system.log.jsm, system.log.streamName, [
          'step-worker',
          'tool-runner',
          'projector',
        ]),
      ]
    : [];
  const timeline = await commitTimeline(system.log, ref);
  const runtime = stepCycleTimes(timeline).slice(warmup);
  const hops = [...cycleHops(timeline)].map(([hop, times]) => {
    const measured = times.slice(warmup);
    return [`  ${hop}`, ms(percentile(measured, 50)), ms(percentile(measured, 90)), String(measured.length)];
  });
  const latency = calls.flatMap((event) => (event.type === 'llm_usage' ? [event.latency_ms] : [])).slice(warmup + 1);
  const rows = [
    ['per cycle', 'p50', 'p90', 'n'],
    [
      'raw JetStream floor, same messages (3 publishes; 3 groups, 9 deliveries)',
      ms(percentile(sameMessages.times, 50)),
      ms(percentile(sameMessages.times, 90)),
      String(sameMessages.times.length),
    ],
    [
      "raw JetStream floor, the cycle's groups only (3 publishes; 2 groups, 6 deliveries)",
      ms(percentile(floor.times, 50)),
      ms(percentile(floor.times, 90)),
      String(floor.times.length),
    ],
    ['runtime step cycle', ms(percentile(runtime, 50)), ms(percentile(runtime, 90)), String(runtime.length)],
    ...hops,
    [
      '  of which model call (llm_usage latency_ms)',
      ms(percentile(latency, 50)),
      ms(percentile(latency, 90)),
      String(latency.length),
    ],
    [
      'ratio to the same messages',
      ratio(percentile(runtime, 50), percentile(sameMessages.times, 50)),
      ratio(percentile(runtime, 90), percentile(sameMessages.times, 90)),
      '',
    ],
    [
      "ratio to the cycle's groups only",
      ratio(percentile(runtime, 50), percentile(floor.times, 50)),
      ratio(percentile(runtime, 90), percentile(floor.times, 90)),
      '',
    ],
  ];
  if (model === 'server') {
    // the model call is the SDK's HTTP round trip to the local scripted server, not the runtime's
    rows.push([
      '  ratio to the same messages without the model call (p50 cycle - p50 call)',
      ratio(percentile(runtime, 50) - percentile(latency, 50), percentile(sameMessages.times, 50)),
      '',
      '',
    ]);
  }
  const perCycle = (after: number, before: number, scale = 1): string =>
    ((scale * (after - before)) / total).toFixed(2);
  const cpuRows = [
    [`per cycle (${total} cycles after warm-up)`, ...pids.keys(), model === 'server' ? 'bench (brain)' : 'bench'],
    [
      'CPU ms',
      ...cpuAfter.map((after, index) => perCycle(after, cpuBefore[index]!, 1_000)),
      ((bench.user + bench.system) / 1_000 / total).toFixed(2),
    ],
    ['write system calls', ...callsAfter.map((after, index) => perCycle(after.writes, callsBefore[index]!.writes)), ''],
    ['read system calls', ...callsAfter.map((after, index) => perCycle(after.reads, callsBefore[index]!.reads)), ''],
  ];
  const runtimeCpu = (cpuAfter.reduce((sum, after, index) => sum + after - cpuBefore[index]!, 0) * 1_000) / total;
  const floorCpu = sameMessages.cpuMs / sameMessages.times.length;
  const cpuLine = `CPU per cycle, every process: runtime ${runtimeCpu.toFixed(2)} ms, same-messages floor ${floorCpu.toFixed(2)} ms (${servers.size > 1 ? 'the nats-servers' : 'nats-server'} and the bare client): ${ratio(runtimeCpu, floorCpu)}`;
  const outcomeLines = [...outcomesAfter].map(([name, after]) => {
    const before = outcomesBefore.get(name);
    const counts = [...after].map(([outcome, count]) => `${outcome} ${perCycle(count, before?.get(outcome) ?? 0)}`);
    return `  ${name}: ${counts.join(', ')}`;
  });
  const floorPlacement = system.cluster
    ? [
        `floor runs (same messages, then groups only; before, after): ${[...sameMessages.placements, ...floor.placements].join('; ')}`,
      ]
    : [];
  return [
    table(rows),
    '',
    table(cpuRows),
    cpuLine,
    'Delivered commits handled per cycle, by outcome:',
    ...outcomeLines,
    ...placement,
    ...floorPlacement,
  ].join('\n');
}

/** Each service process's handled commits so far, by outcome (from its /metrics). */
async function handledOutcomes(system: RunningTestSystem): Promise<Map<string, Map<string, number>>> {
  const entries = await Promise.all(
    [...system.healthUrls].map(
      async ([name, url]) =>
        [name, await sumByLabel(`${url}/metrics`, 'flotilla_commits_handled_total', 'outcome')] as const,
    ),
  );
  return new Map(entries);
}

/** Waits until the conversation holds `actions` action events (polls its tail: one direct get each, a leader message get on R3). */
async function waitForActions(
  system: RunningTestSystem,
  ref: ConversationRef,
  actions: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // a think cycle is four events (llm_usage, action, execution_started, observation) after the first few
  while ((await system.log.tail(ref)).lastSeq < 4 * actions) {
    if (Date.now() > deadline) throw new Error(`fewer than ${actions} actions in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The floor: per cycle, what the runtime's cycle does on NATS, with nothing else. The "step worker"
 * publishes an action commit; the "tool runner" group's durable pull consumer delivers it; the
 * runner publishes execution_started and the observation; the "step worker" group's consumer
 * delivers the observation. One connection per group (one process each in the runtime), the same
 * commit bytes and headers, msg ids and expected last subject sequences; each group is delivered
 * every commit, and acks it. With `projector`, a third group (the projector's) is delivered
 * every commit too, as in the runtime, off the cycle's critical path.
 *
 * On a cluster the floor's stream and its consumers are R3 like the runtime's (a publish is
 * acknowledged once a quorum stored it, an ack is replicated in the consumer's group), and its
 * connections pick their node at random as the services' do. Like the single-server floor it
 * reads nothing back: the runtime's cycle decides from the deliveries (which carry the
 * commit), so neither does a direct or a leader message get per cycle in the steady state.
 * The bare clients connect as the test system's admin (the server refuses anonymous clients);
 * the consumers are deleted after the run, so no idle R3 group stays behind during the next.
 */
async function rawFloor(
  system: RunningTestSystem,
  natsPids: readonly number[],
  warmup: number,
  cycles: number,
  projector: boolean,
): Promise<FloorRun> {
  const connectAs = (name: string) => connect({ ...system.natsOptions('admin'), name: `bench-floor-${name}` });
  const worker = await connectAs('step-worker');
  const runner = await connectAs('tool-runner');
  const watcher = projector ? await connectAs('projector') : undefined;
  const natsCpu = async (): Promise<number> =>
    (await Promise.all(natsPids.map(cpuSeconds))).reduce((sum, seconds) => sum + seconds, 0);
  try {
    const log = await EventLog.open(worker, {
      streamName: 'BENCH_FLOOR',
      subjectPrefix: 'bench.floor',
      replicas: system.cluster ? 3 : 1,
    });
    const ref = { tenant: 'bench', conversation: `floor-${newId()}` };
    const subject = log.subject(ref);
    // what the stream stores carries more tokens than the subject written (its partition): the
    // groups filter, and the append's expected sequence is checked over, the conversation's subjects
    const filter = log.filter(ref);
    const groups = [
      [`tr-${ref.conversation}`, runner],
      [`sw-${ref.conversation}`, worker],
      ...(watcher ? [[`pj-${ref.conversation}`, watcher] as const] : []),
    ] as const;
    const inboxes = [];
    for (const [name, nc] of groups) {
      await log.jsm.consumers.add(log.streamName, {
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        filter_subject: filter,
        max_ack_pending: 1_024,
      });
      inboxes.push(await inbox(jetstream(nc), log.streamName, name));
    }
    const [toRunner, toWorker, toProjector] = inboxes as [Inbox, Inbox, Inbox | undefined];
    const [action, started, observation] = cycleCommits(ref);
    const jsWorker = jetstream(worker);
    const jsRunner = jetstream(runner);
    let last = 0;
    const publish = async (js: JetStreamClient, commit: Encoded): Promise<number> => {
      commit.headers.set('Nats-Expected-Last-Subject-Sequence', String(last));
      commit.headers.set('Nats-Expected-Last-Subject-Sequence-Subject', filter);
      const ack = await js.publish(subject, commit.data, { headers: commit.headers, msgID: newId() });
      last = ack.seq;
      return ack.seq;
    };
    const times: number[] = [];
    let cpu: { nats: number; client: NodeJS.CpuUsage } | undefined;
    for (let cycle = 0; cycle < warmup + cycles; cycle += 1) {
      if (cycle === warmup) cpu = { nats: await natsCpu(), client: process.cpuUsage() };
      const start = performance.now();
      await toRunner.until(await publish(jsWorker, action));
      await publish(jsRunner, started);
      await toWorker.until(await publish(jsRunner, observation));
      if (cycle >= warmup) times.push(performance.now() - start);
    }
    await toProjector?.until(last);
    const client = process.cpuUsage(cpu!.client);
    const cpuMs = ((await natsCpu()) - cpu!.nats) * 1_000 + (client.user + client.system) / 1_000;
    const placement = system.cluster ? await floorPlacement(log, groups) : undefined;
    await Promise.all(inboxes.map((box) => box.close()));
    for (const [name] of groups) await log.jsm.consumers.delete(log.streamName, name);
    return new FloorRun(times, cpuMs, placement === undefined ? [] : [placement]);
  } finally {
    await Promise.all([worker.close(), runner.close(), watcher?.close()]);
  }
}

/** Cycle times of floor runs, and the CPU (nats-server's and the client's) their measured cycles took. */
class FloorRun {
  constructor(
    readonly times: number[],
    public cpuMs: number,
    /** On a cluster, where each run's stream, consumers and connections were. */
    readonly placements: string[],
  ) {}

  add(other: FloorRun): void {
    this.times.push(...other.times);
    this.cpuMs += other.cpuMs;
    this.placements.push(...other.placements);
  }
}

/** One floor run on a cluster, compactly: `stream n2, groups n1/n3[/n2] on clients n3/n1[/n2]` (tool runner, step worker[, projector]). */
async function floorPlacement(log: EventLog, groups: readonly (readonly [string, NatsConnection])[]): Promise<string> {
  const stream = (await log.jsm.streams.info(log.streamName)).cluster?.leader ?? '?';
  const leaders = await Promise.all(
    groups.map(async ([name]) => (await log.jsm.consumers.info(log.streamName, name)).cluster?.leader ?? '?'),
  );
  return `stream ${stream}, groups ${leaders.join('/')} on clients ${groups.map(([, nc]) => nc.info?.server_name ?? '?').join('/')}`;
}

type Encoded = ReturnType<typeof encodeCommit>;

type Inbox = { until(seq: number): Promise<void>; close(): Promise<void> };

/** A durable pull consumer's deliveries, acked on arrival; `until` resolves once `seq` was delivered. */
async function inbox(js: JetStreamClient, stream: string, name: string): Promise<Inbox> {
  let latest = 0;
  let waiting: { seq: number; resolve: () => void } | undefined;
  const consumer = await js.consumers.get(stream, name);
  const messages = await consumer.consume({
    max_messages: 256,
    callback: (message) => {
      message.ack();
      latest = Math.max(latest, message.seq);
      if (waiting && waiting.seq <= latest) {
        waiting.resolve();
        waiting = undefined;
      }
    },
  });
  return {
    until: (seq) => (seq <= latest ? Promise.resolve() : new Promise<void>((resolve) => (waiting = { seq, resolve }))),
    close: async () => void (await messages.close()),
  };
}

/** The three commits of a think-tool cycle, encoded as the runtime writes them. */
function cycleCommits(ref: ConversationRef): [Encoded, Encoded, Encoded] {
  const agent = { ...ref, source: 'agent' as const };
  const system = { ...ref, source: 'system' as const };
  const action = draftEvent(agent, 'action', {
    tool_call_id: 'call_cycle_0_0',
    tool_name: 'think',
    arguments: JSON.stringify({ thought: 'Step 0.0 of cycle: plan the next move.', security_risk: 'low' }),
    input: { thought: 'Step 0.0 of cycle: plan the next move.' },
    thought: [],
    response_id: 'chatcmpl-brain1',
    security_risk: 'low',
  });
  const commits: EventDraft[][] = [
    [
      draftEvent(system, 'llm_usage', {
        model: 'brain',
        purpose: 'step',
        response_id: 'chatcmpl-brain1',
        prompt_tokens: 100,
        completion_tokens: 20,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 2,
        cost_usd: 0,
      }),
      action,
    ],
    [draftEvent(system, 'execution_started', { action_ids: [action.id], runner: 'tool-runner-12345678' })],
    [
      draftEvent({ ...ref, source: 'environment' }, 'observation', {
        action_id: action.id,
        tool_call_id: 'call_cycle_0_0',
        tool_name: 'think',
        content: [{ type: 'text', text: 'Your thought has been logged.' }],
        is_error: false,
      }),
    ],
  ];
  let seq = 0;
  const [actionCommit, startedCommit, observationCommit] = commits.map((drafts) => {
    const events = placeEvents(ref, drafts, seq);
    seq += events.length;
    return encodeCommit(newId(), ref, events);
  });
  return [actionCommit!, startedCommit!, observationCommit!];
}
