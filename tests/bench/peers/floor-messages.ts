import { jetstream, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';

/**
 * The bus floor (floor-peer.ts): the messages Flotilla's design needs per step, with none of its
 * code. A commit is a small JSON message on `<prefix>.<conversation>.<kind>` (its writer: `user`,
 * `step` for the deciders', `tool` for the runner's), appended with the optimistic-concurrency
 * check Flotilla's log makes (the last sequence of the conversation's subjects expected).
 */
export const FLOOR = { stream: 'FLOOR', prefix: 'floor.ev', bucket: 'floor_snapshots' } as const;

/** The floor's consumer groups, each a durable consumer. */
export type FloorGroup = 'deciders' | 'runners' | 'projectors';

/** The kind of commit each group writes, which Flotilla's design does not deliver back to it (libs/bus SELF_CONTINUING). */
export const OWN_KIND: Readonly<Record<FloorGroup, string | undefined>> = {
  deciders: 'step',
  runners: 'tool',
  projectors: undefined,
};

export type FloorCommit =
  | { readonly type: 'message' | 'finish'; readonly step: number }
  | { readonly type: 'action' | 'started' | 'observation'; readonly step: number; readonly callId: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const conversationOf = (message: JsMsg): string => message.subject.slice(FLOOR.prefix.length + 1).split('.')[0]!;

const KIND: Readonly<Record<FloorCommit['type'], string>> = {
  message: 'user',
  action: 'step',
  finish: 'step',
  started: 'tool',
  observation: 'tool',
};
export const readCommit = (message: JsMsg): FloorCommit => JSON.parse(decoder.decode(message.data)) as FloorCommit;

/** Appends `commit` after the commit at stream sequence `after` (0: the conversation's first); resolves with its stream sequence. */
export async function append(
  js: JetStreamClient,
  conversation: string,
  commit: FloorCommit,
  after: number,
): Promise<number> {
  const expect = headers();
  expect.set('Nats-Expected-Last-Subject-Sequence', String(after));
  expect.set('Nats-Expected-Last-Subject-Sequence-Subject', `${FLOOR.prefix}.${conversation}.*`);
  const ack = await js.publish(
    `${FLOOR.prefix}.${conversation}.${KIND[commit.type]}`,
    encoder.encode(JSON.stringify(commit)),
    { headers: expect },
  );
  return ack.seq;
}

/**
 * Hands every message of the group's durable consumer to `handle` as it comes (concurrently, as
 * Flotilla's groups do), acking each once `handle` resolves.
 */
export async function consumeGroup(
  nc: NatsConnection,
  group: FloorGroup,
  handle: (message: JsMsg) => Promise<void>,
): Promise<void> {
  const js = jetstream(nc);
  const messages = await (await js.consumers.get(FLOOR.stream, group)).consume({ max_messages: 1_000 });
  void (async () => {
    for await (const message of messages) {
      handle(message).then(
        () => message.ack(),
        (error: unknown) => {
          process.stderr.write(`floor ${group}: ${String(error)}\n`);
          message.nak(100);
        },
      );
    }
  })();
}
