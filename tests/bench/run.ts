import { benchAgentStep } from './agent-step.bench.js';
import { benchColdLoad } from './cold-load.bench.js';
import { benchLogAppend } from './log-append.bench.js';
import { benchStepCycle } from './step-cycle.bench.js';
import { benchStepWorkerMemory } from './step-worker-memory.bench.js';
import { benchThroughput } from './throughput.bench.js';
import { benchWsFanout } from './ws-fanout.bench.js';
import { benchWsIdleMemory } from './ws-idle-memory.bench.js';

/** Runs the benchmarks named on the command line (default: all) and prints their figures. */
const benches: Record<string, () => Promise<string>> = {
  'log-append': () => benchLogAppend(),
  'cold-load': () => benchColdLoad(),
  'step-cycle': () => benchStepCycle(),
  throughput: () => benchThroughput(),
  'step-worker-memory': () => benchStepWorkerMemory(),
  'agent-step': () => benchAgentStep(),
  'ws-fanout': () => benchWsFanout(),
  'ws-idle-memory': () => benchWsIdleMemory(),
};

const wanted = process.argv.slice(2).filter((name) => name !== '--');
const names = wanted.length > 0 ? wanted : Object.keys(benches);
for (const name of names) {
  const bench = benches[name];
  if (!bench) {
    console.error(`unknown benchmark "${name}"; known: ${Object.keys(benches).join(', ')}`);
    process.exit(2);
  }
  console.log(`\n== ${name} ==`);
  console.log(await bench());
}
