import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { FloorName } from './floor-messages.js';
import { FIGURES_LINE, OPTIONS_VARIABLE, type PeerFigures, type PeerOptions } from './figures.js';

export type PeerName = 'dbos' | 'langgraph' | 'restate' | FloorName;

const ENTRY = fileURLToPath(new URL('./peer-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Runs one peer in a process of its own (peer-main.ts under tsx) and returns its figures. With
 * `isolateNetwork` the process, and whatever it starts, gets a network namespace of its own with
 * loopback only (`unshare --net`; as a user that is not root, with `--map-root-user`).
 */
export async function runPeer(
  peer: PeerName,
  options: PeerOptions,
  isolateNetwork: boolean,
  timeoutMs = 15 * 60_000,
): Promise<PeerFigures> {
  const node = [process.execPath, '--import', 'tsx', ENTRY, peer];
  const [command, ...args] = isolateNetwork
    ? [
        'unshare',
        '--net',
        ...(process.getuid?.() === 0 ? [] : ['--map-root-user']),
        'sh',
        '-c',
        'ip link set lo up && exec "$0" "$@"',
        ...node,
      ]
    : node;
  const child = spawn(command!, args, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      [OPTIONS_VARIABLE]: JSON.stringify(options),
      // the peers' own logs at warnings (the Restate SDK logs every invocation at its default)
      RESTATE_LOGGING: 'WARN',
      // LangChain's tracing to LangSmith stays off whatever the environment says
      LANGSMITH_TRACING: 'false',
      LANGCHAIN_TRACING_V2: 'false',
    },
  });
  let figures: PeerFigures | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith(FIGURES_LINE)) figures = JSON.parse(line.slice(FIGURES_LINE.length)) as PeerFigures;
    else process.stderr.write(`${peer}: ${line}\n`);
  });
  const errors: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    errors.push(line);
    process.stderr.write(`${peer}: ${line}\n`);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  if (code !== 0 || !figures)
    throw new Error(
      `the ${peer} peer's process ended with ${code} and ${figures ? 'its figures' : 'no figures'}: ${errors.slice(-5).join(' | ')}`,
    );
  return figures;
}
