import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { append, consumeGroup, conversationOf, FLOOR, readCommit, type FloorBody } from './floor-messages.js';

/**
 * A process of the bus floor (floor-peer.ts starts them): `floor-role.ts runner|projector <url> bare|protocol`.
 * The runner answers each action with a durable start, then (the no-op tool having run) its
 * observation; the projector writes a conversation's snapshot to KV once per step, at its
 * observation. Prints `ready` once consuming; ends at SIGTERM.
 */
const [role, url, bodyArgument] = process.argv.slice(2);
const body: FloorBody = bodyArgument === 'protocol' ? 'protocol' : 'bare';
const nc = await connect({ servers: url });
const js = jetstream(nc);
const encoder = new TextEncoder();

if (role === 'runner') {
  await consumeGroup(nc, 'runners', async (message) => {
    const commit = readCommit(message, body);
    if (commit.type !== 'action') return;
    const conversation = conversationOf(message);
    const { step, callId, actionId } = commit;
    const started = await append(js, conversation, { type: 'started', step, callId, actionId }, message.seq, body);
    await append(js, conversation, { type: 'observation', step, callId, actionId }, started, body);
  });
} else if (role === 'projector') {
  const kv = await new Kvm(js).create(FLOOR.bucket, { history: 1 });
  await consumeGroup(nc, 'projectors', async (message) => {
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
} else {
  throw new Error(`unknown role "${role}": runner or projector`);
}
process.stdout.write('ready\n');
process.once('SIGTERM', () => void nc.close().then(() => process.exit(0)));
