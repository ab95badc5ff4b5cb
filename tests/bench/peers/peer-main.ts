import { eachFloor } from './floor-messages.js';
import { FIGURES_LINE, OPTIONS_VARIABLE, type PeerOptions } from './figures.js';
import { ScriptedLoop } from './loop.js';
import { measurePeer, type PeerEngine } from './measure.js';

/**
 * One peer's process (spawned by peers.bench.ts): `peer-main.ts dbos|langgraph|restate|<a floor of FLOORS>`, its
 * settings as JSON in PEER_OPTIONS. It sets the engine up with the loop's model and tool, measures
 * the cycle and the load, and prints its figures as one line (FIGURES_LINE, then JSON).
 */
const peer = process.argv[2];
const options = JSON.parse(process.env[OPTIONS_VARIABLE] ?? 'null') as PeerOptions | null;
if (!options) throw new Error(`${OPTIONS_VARIABLE} must hold the benchmark's settings (peers.bench.ts sets it)`);

const starters: Record<string, () => Promise<(loop: ScriptedLoop, options: PeerOptions) => Promise<PeerEngine>>> = {
  dbos: async () => (await import('./dbos-peer.js')).startDbos,
  langgraph: async () => (await import('./langgraph-peer.js')).startLangGraph,
  restate: async () => (await import('./restate-peer.js')).startRestate,
  ...eachFloor(
    (spec) => async () => async (loop: ScriptedLoop, options: PeerOptions) =>
      (await import('./floor-peer.js')).startFloor(loop, options, spec),
  ),
};
const starter = peer === undefined ? undefined : starters[peer];
if (!starter) throw new Error(`unknown peer "${peer}"; known: ${Object.keys(starters).join(', ')}`);

const loop = new ScriptedLoop();
const engine = await (await starter())(loop, options);
try {
  const figures = await measurePeer(engine, loop, options);
  process.stdout.write(`${FIGURES_LINE}${JSON.stringify(figures)}\n`);
} finally {
  await engine.close();
}
process.exit(0);
