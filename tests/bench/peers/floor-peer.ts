import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { PeerOptions } from './figures.js';
import {
  append,
  consumeGroup,
  conversationOf,
  FLOOR,
  OWN_KIND,
  readCommit,
  type FloorBody,
  type FloorGroup,
} from './floor-messages.js';
import type { Decision, ScriptedLoop } from './loop.js';
import type { PeerEngine } from './measure.js';

const ROLE = fileURLToPath(new URL('./floor-role.ts', import.meta.url));

/**
 * The bus floor: what the messages of Flotilla's design cost on nats-server, with none of
 * Flotilla's code. Per step the same three commits as Flotilla's (an action, its durable start,
 * its observation), each a small JSON message on a subject naming its kind, appended with the
 * conversation's last sequence expected, on one JetStream file stream; three groups, each a
 * durable pull consumer with explicit acks; processes as Flotilla's: the deciders in this process
 * (the model beside them, as in Flotilla's step worker), the runner and the projector in one each,
 * the projector writing one KV snapshot per step. `filtered`: the deciders and the runner are not
 * delivered their own kind (Flotilla's design, 6 deliveries per step); else every group is
 * delivered every commit (9). No validation, no view, no headers, no tracing, no metrics, no
 * batching: the design's traffic rather than a system. With `body` 'protocol' the commits are
 * Flotilla's own (its events and headers), validated as they are written and as each group reads
 * them, as the protocol requires of any process on it. A step counts when the decider reads its
 * observation (in the steady state as many as tool runs).
 */
export async function startFloor(
  loop: ScriptedLoop,
  options: PeerOptions,
  filtered: boolean,
  body: FloorBody = 'bare',
): Promise<PeerEngine> {
  const groups: FloorGroup[] = ['deciders', 'runners', 'projectors'];
  const roles = ['runner', 'projector'];
  const server = await NatsServerProcess.start({ storeDir: await mkdtemp(join(options.scratchDir, 'floor-')) });
  const children: ChildProcess[] = [];
  try {
    const nc = await connect({ servers: server.url });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: FLOOR.stream,
      subjects: [`${FLOOR.prefix}.*.*`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
    });
    for (const group of groups) {
      const own = filtered ? OWN_KIND[group] : undefined;
      const filter =
        own === undefined
          ? {}
          : {
              filter_subjects: ['user', 'step', 'tool']
                .filter((kind) => kind !== own)
                .map((kind) => `${FLOOR.prefix}.*.${kind}`),
            };
      await jsm.consumers.add(FLOOR.stream, {
        durable_name: group,
        ack_policy: AckPolicy.Explicit,
        max_ack_pending: 10_000,
        ...filter,
      });
    }
    await new Kvm(js).create(FLOOR.bucket, { history: 1 });
    for (const role of roles) children.push(await startRole(role, server.url, body));

    const conversations = new Map<
      string,
      { readonly maxSteps: number; decision?: Decision; readonly done: () => void }
    >();
    await consumeGroup(nc, 'deciders', async (message) => {
      const commit = readCommit(message, body);
      if (commit.type !== 'message' && commit.type !== 'observation') return;
      const conversation = conversationOf(message);
      const state = conversations.get(conversation);
      if (!state) return;
      if (commit.type === 'observation' && state.decision) loop.tool(conversation, state.decision);
      const step = commit.type === 'message' ? 0 : commit.step + 1;
      const decision = (state.decision = await loop.model(conversation, step, state.maxSteps));
      if (decision.kind === 'finish') {
        await append(js, conversation, { type: 'finish', step }, message.seq, body);
        state.done();
      } else await append(js, conversation, { type: 'action', step, callId: decision.callId }, message.seq, body);
    });

    return {
      name: !filtered
        ? 'bus floor, every commit to every group'
        : body === 'protocol'
          ? "bus floor, kinds filtered, Flotilla's commits validated"
          : 'bus floor, kinds filtered',
      async run(conversation, maxSteps) {
        const finished = new Promise<void>((resolve) => conversations.set(conversation, { maxSteps, done: resolve }));
        await append(js, conversation, { type: 'message', step: 0 }, 0, body);
        await finished;
      },
      async processes() {
        return new Map([
          ['node (deciders, model)', [process.pid]],
          ...roles.map((role, index): [string, number[]] => [`node (${role})`, [children[index]!.pid!]]),
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
            : `each delivered to ${groups.length} groups`;
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
async function startRole(role: string, url: string, body: FloorBody): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ROLE, role, url, body], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) =>
      line === 'ready' ? resolve() : process.stderr.write(`floor ${role}: ${line}\n`),
    );
    child.once('exit', (code) => reject(new Error(`the floor's ${role} ended with ${code} before it was ready`)));
  });
  await ready;
  return child;
}
