import { benchAgentStep } from './agent-step.bench.js';
import { benchBacklogDrain } from './backlog-drain.bench.js';
import { benchColdLoad } from './cold-load.bench.js';
import { benchConversationScale } from './conversation-scale.bench.js';
import { benchCommandLatency } from './command-latency.bench.js';
import { benchLogAppend } from './log-append.bench.js';
import { benchMasking } from './masking.bench.js';
import { benchModelRequest } from './model-request.bench.js';
import { benchModelTransport } from './model-transport.bench.js';
import { benchPeers } from './peers.bench.js';
import { benchSandbox } from './sandbox.bench.js';
import { benchSink } from './sink.bench.js';
import { benchStepCycle } from './step-cycle.bench.js';
import { benchStepWorkerMemory } from './step-worker-memory.bench.js';
import { benchThroughput } from './throughput.bench.js';
import { benchTenantFairness, FAIRNESS_DEFAULTS } from './tenant-fairness.bench.js';
import { benchTracing } from './tracing.bench.js';
import { benchWsFanout } from './ws-fanout.bench.js';
import { benchWsIdleMemory } from './ws-idle-memory.bench.js';

/**
 * Runs the benchmarks named on the command line (default: all) and prints their figures.
 * `--cycles N` sets the step-cycle benchmark's measured cycles (default 200): the model request
 * grows with each cycle, so longer runs show what a long conversation costs per step.
 * `--model in-process|server` measures the step cycle with one of its two models only.
 * `log-append-r3` and `step-cycle-r3` are the same two on a 3-node JetStream cluster (R3), each
 * against its floor on the same cluster; `--cycles` and `--model` apply to `step-cycle-r3` too.
 * `--big` adds 10,000 conversations x 30 s to `conversation-scale`.
 * `--delivery-order` runs `tenant-fairness` without the step worker's and tool runner's lookahead
 * (commits served in the order they come, as before fair scheduling); `--fair-reserve N` runs it
 * with the step worker's FLOTILLA_FAIR_RESERVE set to N.
 */
const args = process.argv.slice(2).filter((arg) => arg !== '--');
const cyclesAt = args.indexOf('--cycles');
const cycles = cyclesAt < 0 ? 200 : Number(args.splice(cyclesAt, 2)[1]);
if (!Number.isInteger(cycles) || cycles < 10) {
  console.error('--cycles takes a whole number of at least 10');
  process.exit(2);
}
const bigAt = args.indexOf('--big');
const big = bigAt >= 0;
if (big) args.splice(bigAt, 1);
const deliveryOrderAt = args.indexOf('--delivery-order');
const deliveryOrder = deliveryOrderAt >= 0;
if (deliveryOrder) args.splice(deliveryOrderAt, 1);
const reserveAt = args.indexOf('--fair-reserve');
const fairReserve = reserveAt < 0 ? undefined : Number(args.splice(reserveAt, 2)[1]);
if (fairReserve !== undefined && (!Number.isInteger(fairReserve) || fairReserve < 0)) {
  console.error('--fair-reserve takes a whole number of slots');
  process.exit(2);
}
const peersAt = args.indexOf('--peers');
const peersOnly = peersAt < 0 ? undefined : args.splice(peersAt, 2)[1]!.split(',').filter(Boolean);
const modelAt = args.indexOf('--model');
const model = modelAt < 0 ? undefined : args.splice(modelAt, 2)[1];
if (model !== undefined && model !== 'in-process' && model !== 'server') {
  console.error('--model takes in-process or server');
  process.exit(2);
}

const benches: Record<string, () => Promise<string>> = {
  'log-append': () => benchLogAppend(),
  'cold-load': () => benchColdLoad(),
  'command-latency': () => benchCommandLatency(),
  'step-cycle': () => benchStepCycle(cycles, model === undefined ? ['in-process', 'server'] : [model]),
  'log-append-r3': () => benchLogAppend(20, 100, 3),
  'step-cycle-r3': () => benchStepCycle(cycles, model === undefined ? ['in-process', 'server'] : [model], 20, 3),
  throughput: () => benchThroughput(),
  'conversation-scale': () => benchConversationScale(big),
  'step-worker-memory': () => benchStepWorkerMemory(),
  'agent-step': () => benchAgentStep(),
  'model-request': () => benchModelRequest(),
  'model-transport': () => benchModelTransport(),
  'ws-fanout': () => benchWsFanout(),
  'ws-idle-memory': () => benchWsIdleMemory(),
  sandbox: () => benchSandbox(),
  masking: () => benchMasking(),
  'backlog-drain': () => benchBacklogDrain(),
  tracing: () => benchTracing(),
  sink: () => benchSink(),
  peers: () => benchPeers(peersOnly),
  'tenant-fairness': () =>
    benchTenantFairness({ ...FAIRNESS_DEFAULTS, deliveryOrder, ...(fairReserve === undefined ? {} : { fairReserve }) }),
};

const names = args.length > 0 ? args : Object.keys(benches);
for (const name of names) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  console.log(await bench());
}
