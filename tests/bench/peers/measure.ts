import { cpuSeconds } from '../process-stats.js';
import { FIRST_CYCLES_LEFT_OUT, percentile, warmupConversations } from '../stats.js';
import type { PeerFigures, PeerOptions } from './figures.js';
import type { ScriptedLoop } from './loop.js';

/** A peer's engine, set up in this process with the loop's model and tool in its durable steps. */
export type PeerEngine = {
  readonly name: string;
  /** Runs one conversation's loop on the engine until the model decides to finish. */
  run(conversation: string, maxSteps: number): Promise<void>;
  /** Every process whose CPU is the peer's, by label (this one's included), listed anew at each call. */
  processes(): Promise<ReadonlyMap<string, readonly number[]>>;
  /**
   * Called before the cycle's conversation (`conversation`) and before the load's conversations
   * start (`load`); what it returns, after they have all ended: what the engine wrote per step,
   * one line each.
   */
  beginWrites(scope: 'conversation' | 'load'): Promise<(steps: number, conversation: string) => Promise<string[]>>;
  close(): Promise<void>;
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const now = (): number => performance.timeOrigin + performance.now();

/**
 * The cycle (one conversation, zero-latency model, `cycles` of it, after `warmupCycles` in earlier
 * conversations: see warmupConversations), then the load
 * (`conversations` at once, the model at `latencyMs`): CPU of every process and steps done over
 * `windowMs` after `warmupMs`. Each conversation under load runs until the window has closed.
 */
export async function measurePeer(engine: PeerEngine, loop: ScriptedLoop, options: PeerOptions): Promise<PeerFigures> {
  loop.latencyMs = 0;
  for (const [index, steps] of warmupConversations(options.warmupCycles).entries())
    await engine.run(`warmup-${index}`, steps);
  const finishWrites = await engine.beginWrites('conversation');
  await engine.run('cycle', FIRST_CYCLES_LEFT_OUT + options.cycles + 1);
  const runs = loop.toolRuns('cycle');
  const gaps = runs
    .slice(1)
    .map((at, index) => at - runs[index]!)
    .slice(FIRST_CYCLES_LEFT_OUT);
  if (gaps.length !== options.cycles)
    throw new Error(
      `${engine.name}: the cycle's conversation ran ${runs.length} tools, not ${FIRST_CYCLES_LEFT_OUT + options.cycles + 1} (a database left from an earlier run?)`,
    );
  const writes = await finishWrites(runs.length, 'cycle');
  const cycle = { p50: percentile(gaps, 50), p90: percentile(gaps, 90), n: gaps.length };

  loop.latencyMs = options.latencyMs;
  const finishLoadWrites = await engine.beginWrites('load');
  const loadStart = now();
  const failures: unknown[] = [];
  const running = Array.from({ length: options.conversations }, (_, index) =>
    engine.run(`load-${index}`, Number.MAX_SAFE_INTEGER).catch((error: unknown) => void failures.push(error)),
  );
  await sleep(options.warmupMs);
  const before = await cpuSnapshot(engine);
  const from = now();
  await sleep(options.windowMs);
  const to = now();
  const after = await cpuSnapshot(engine);
  loop.stopping = true;
  await Promise.all(running);
  if (failures.length > 0)
    throw new Error(
      `${failures.length} of ${options.conversations} conversations failed under load; the first: ${String(failures[0])}`,
    );
  // over the whole load run, its start and end included: statistics read in a window lag behind
  const loadWrites = await finishLoadWrites(loop.toolRunsBetween(loadStart, Number.POSITIVE_INFINITY), '');

  const cpu: Record<string, number> = {};
  const processes: Record<string, { counted: number; gone: number }> = {};
  for (const [label, pids] of after) {
    const earlier = before.get(label) ?? new Map<number, number>();
    // a process that started in the window counts from zero; one gone by its end is not counted
    cpu[label] = [...pids].reduce((sum, [pid, seconds]) => sum + seconds - (earlier.get(pid) ?? 0), 0);
    processes[label] = { counted: pids.size, gone: [...earlier.keys()].filter((pid) => !pids.has(pid)).length };
  }
  const idealSteps = (options.conversations * (to - from)) / (options.latencyMs + cycle.p50);
  return {
    peer: engine.name,
    cycle,
    load: {
      conversations: options.conversations,
      latencyMs: options.latencyMs,
      windowMs: to - from,
      steps: loop.toolRunsBetween(from, to),
      idealSteps,
      cpuSeconds: cpu,
      processes,
    },
    writes: { conversation: writes, load: loadWrites },
  };
}

async function cpuSnapshot(engine: PeerEngine): Promise<Map<string, Map<number, number>>> {
  const snapshot = new Map<string, Map<number, number>>();
  for (const [label, pids] of await engine.processes()) {
    const used = new Map<number, number>();
    await Promise.all(
      pids.map(async (pid) => {
        const seconds = await cpuSeconds(pid).catch(() => undefined); // gone between the listing and the read
        if (seconds !== undefined) used.set(pid, seconds);
      }),
    );
    snapshot.set(label, used);
  }
  return snapshot;
}
