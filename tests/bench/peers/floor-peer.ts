import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { PeerOptions } from './figures.js';
import {
  append,
  FLOOR,
  busConversation,
  consumeAsDecider,
  loopConversation,
  floorLayout,
  floorTitle,
  type FloorSpec,
} from './floor-messages.js';
import type { ScriptedLoop } from './loop.js';
import type { PeerEngine } from './measure.js';

const ROLE = fileURLToPath(new URL('./floor-role.ts', import.meta.url));

/**
 * The bus floor: what the messages of Flotilla's design cost on nats-server, with none of
 * Flotilla's code. Per step the same three commits as Flotilla's (an action, its durable start,
 * its observation), each a small JSON message on a subject naming its kind, appended with the
 * conversation's last sequence expected, on one JetStream file stream; three groups, each a
 * durable pull consumer with explicit acks; processes as Flotilla's: the deciders in this process
 * (the model beside them, as in Flotilla's step worker), the runner and the projector in one each,
 * the projector writing one KV snapshot per step. No view, no tracing, no metrics, no batching:
 * the design's traffic rather than a system. What varies (FloorSpec): whether the deciders and the
 * runner are delivered their own kind (filtered: Flotilla's design, 6 deliveries per step; else 9);
 * whether the commits are small JSON or Flotilla's own (its events and headers), validated as they
 * are written and as each group reads them, as the protocol requires of any process on it; whether
 * the layout is the protocol's, partitioned (floorLayout); and how many deciders and runners there
 * are (the deciders past the first in processes of their own: RemoteDeciders), sharing each
 * group's consumers. A step counts when a decider reads its
 * observation (in the steady state as many as tool runs).
 */
export async function startFloor(loop: ScriptedLoop, options: PeerOptions, spec: FloorSpec): Promise<PeerEngine> {
  const { body, filtered, instances } = spec;
  // the runners, the projector, and every decider past this process's, each with its label
  const numbered = (role: string, count: number, suffix = ''): { role: string; index: number; label: string }[] =>
    Array.from({ length: count }, (_, index) => ({
      role,
      index,
      label: `node (${role}${count > 1 ? ` ${index + 1}` : ''}${suffix})`,
    }));
  // the deciders past this process's are its group's instances 1 and on (this one is 0)
  const roles = [
    ...numbered('runner', instances),
    ...numbered('projector', 1),
    ...numbered('decider', instances - 1, ', model').map((decider) => ({ ...decider, index: decider.index + 1 })),
  ];
  const server = await NatsServerProcess.start({ storeDir: await mkdtemp(join(options.scratchDir, 'floor-')) });
  const children: ChildProcess[] = [];
  try {
    const nc = await connect({ servers: server.url });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const layout = floorLayout(spec);
    await jsm.streams.add({
      ...layout.stream,
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
    });
    for (const config of layout.configs()) await jsm.consumers.add(FLOOR.stream, config);
    await new Kvm(js).create(FLOOR.bucket, { history: 1 });

    // conversations running, by their bus names, each ended when a decider appends its finish
    const running = new Map<string, () => void>();
    const deciders = new RemoteDeciders(loop, (conversation) => running.get(conversation)?.());
    for (const { role, index } of roles) {
      const child = await startRole(role, index, server.url, spec);
      children.push(child);
      if (role === 'decider') deciders.add(child);
    }
    await consumeAsDecider(nc, spec, 0, {
      model: (conversation, step, maxSteps) => loop.model(loopConversation(conversation), step, maxSteps),
      ran: (conversation, callId, step) =>
        void loop.tool(loopConversation(conversation), { kind: 'call', callId, tool: 'noop', arguments: { step } }),
      finished: (conversation) => running.get(conversation)?.(),
    });

    return {
      name: floorTitle(spec),
      async run(conversation, maxSteps) {
        const bus = busConversation(conversation, maxSteps);
        // the tool runs the other deciders timed are all reported before the conversation counts as ended
        const finished = new Promise<void>((resolve) => running.set(bus, resolve)).then(() => deciders.flush());
        await append(js, bus, { type: 'message', step: 0 }, 0, body);
        await finished;
        running.delete(bus);
      },
      async processes() {
        return new Map([
          ['node (deciders, model)', [process.pid]],
          ...roles.map(({ label }, index): [string, number[]] => [label, [children[index]!.pid!]]),
          ['nats-server', [server.pid!]],
        ]);
      },
      async beginWrites() {
        const before = (await jsm.streams.info(FLOOR.stream)).state;
        return async (steps) => {
          const after = (await jsm.streams.info(FLOOR.stream)).state;
          const perStep = (value: number): string => (value / Math.max(1, steps)).toFixed(2);
          const delivered = filtered
            ? 'each delivered to the groups that did not write it'
            : 'each delivered to every group';
          return [
            `${perStep(after.messages - before.messages)} commits of ${((after.bytes - before.bytes) / Math.max(1, after.messages - before.messages)).toFixed(0)} bytes each (stored), ${delivered}; 1 KV snapshot put`,
          ];
        };
      },
      async close() {
        for (const child of children) child.kill('SIGTERM');
        await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
        await nc.close();
        await server[Symbol.asyncDispose]();
      },
    };
  } catch (error) {
    for (const child of children) child.kill('SIGKILL');
    await server[Symbol.asyncDispose]();
    throw error;
  }
}

/** A floor role in a process of its own, once it says it is consuming. */
async function startRole(role: string, index: number, url: string, spec: FloorSpec): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ROLE, role, url, JSON.stringify(spec), String(index)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve();
      else if (role !== 'decider') process.stderr.write(`floor ${role}: ${line}\n`);
    });
    child.once('exit', (code) => reject(new Error(`the floor's ${role} ended with ${code} before it was ready`)));
  });
  await ready;
  return child;
}

/**
 * The deciders in processes of their own: the loop's latency and `stopping` are passed on to them
 * (their stdin), and the tool runs they time and the finishes they append come back (their stdout,
 * a line each: `run <conversation> <ms since the epoch>`, `done <conversation>`, `flushed`).
 */
class RemoteDeciders {
  readonly #children: ChildProcess[] = [];
  #flushes: (() => void)[] = [];
  #flushed = 0;

  constructor(
    private readonly loop: ScriptedLoop,
    private readonly finished: (conversation: string) => void,
  ) {
    loop.onChange(() => this.#send(`latency ${loop.latencyMs}${loop.stopping ? '\nstopping' : ''}`));
  }

  add(child: ChildProcess): void {
    this.#children.push(child);
    child.stdin!.write(`latency ${this.loop.latencyMs}\n`);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const [what, conversation, at] = line.split(' ');
      if (what === 'run') this.loop.recordToolRun(loopConversation(conversation!), Number(at));
      else if (what === 'done') this.finished(conversation!);
      else if (what === 'flushed' && (this.#flushed += 1) === this.#children.length) {
        for (const resolve of this.#flushes) resolve();
        this.#flushes = [];
      }
    });
  }

  /** Resolves once every decider has reported the tool runs it timed so far. */
  flush(): Promise<void> {
    if (this.#children.length === 0) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.#flushes.push(resolve) > 1) return;
      this.#flushed = 0;
      this.#send('flush');
    });
  }

  #send(line: string): void {
    for (const child of this.#children) child.stdin!.write(`${line}\n`);
  }
}
