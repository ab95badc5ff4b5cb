import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { createInterface } from 'node:readline';
import {
  append,
  consumeAsDecider,
  consumeGroup,
  conversationOf,
  FLOOR,
  readCommit,
  type FloorSpec,
} from './floor-messages.js';
import { ScriptedLoop } from './loop.js';

/**
 * A process of the bus floor (floor-peer.ts starts them): `floor-role.ts runner|projector|decider <url> <FloorSpec as JSON>`.
 * The runner answers each action with a durable start, then (the no-op tool having run) its
 * observation; the projector writes a conversation's snapshot to KV once per step, at its
 * observation; a decider is one more instance of the deciders' group, its model and tool the
 * loop's, whose latency and end it is told on its stdin, and whose tool runs and finishes it
 * reports on its stdout, in batches (RemoteDeciders in floor-peer.ts). Prints `ready` once
 * consuming; ends at SIGTERM.
 */
const [role, url, specArgument, indexArgument] = process.argv.slice(2);
const index = Number(indexArgument);
const spec = JSON.parse(specArgument!) as FloorSpec;
const { body } = spec;
const nc = await connect({ servers: url });
const js = jetstream(nc);
const encoder = new TextEncoder();

if (role === 'runner') {
  await consumeGroup(nc, 'runners', spec, index, async (message) => {
    const commit = readCommit(message, body);
    if (commit.type !== 'action') return;
    const conversation = conversationOf(message);
    const { step, callId, actionId } = commit;
    const started = await append(js, conversation, { type: 'started', step, callId, actionId }, message.seq, body);
    await append(js, conversation, { type: 'observation', step, callId, actionId }, started, body);
  });
} else if (role === 'projector') {
  const kv = await new Kvm(js).create(FLOOR.bucket, { history: 1 });
  await consumeGroup(nc, 'projectors', spec, index, async (message) => {
    const commit = readCommit(message, body);
    if (commit.type !== 'observation' && commit.type !== 'finish') return;
    await kv.put(
      conversationOf(message),
      encoder.encode(
        JSON.stringify({
          last_stream_seq: message.seq,
          step: commit.step,
          status: commit.type === 'finish' ? 'finished' : 'running',
        }),
      ),
    );
  });
} else if (role === 'decider') {
  const loop = new ScriptedLoop();
  let reports: string[] = [];
  const report = (): void => {
    if (reports.length > 0) process.stdout.write(`${reports.join('\n')}\n`);
    reports = [];
  };
  setInterval(report, 50);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [what, value] = line.split(' ');
    if (what === 'latency') loop.latencyMs = Number(value);
    else if (what === 'stopping') loop.stopping = true;
    else if (what === 'flush') {
      report();
      process.stdout.write('flushed\n');
    }
  });
  await consumeAsDecider(nc, spec, index, {
    model: (conversation, step, maxSteps) => loop.model(conversation, step, maxSteps),
    ran: (conversation) => void reports.push(`run ${conversation} ${performance.timeOrigin + performance.now()}`),
    finished: (conversation) => {
      report();
      process.stdout.write(`done ${conversation}\n`);
    },
  });
} else {
  throw new Error(`unknown role "${role}": runner, projector or decider`);
}
process.stdout.write('ready\n');
process.once('SIGTERM', () => void nc.close().then(() => process.exit(0)));
