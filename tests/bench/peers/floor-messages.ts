import { jetstream, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * The bus floor (floor-peer.ts): the messages Flotilla's design needs per step, with none of its
 * code. A commit is a small JSON message on its conversation's subject, appended with the
 * optimistic-concurrency check Flotilla's log makes (the subject's last sequence expected).
 */
export const FLOOR = { stream: 'FLOOR', prefix: 'floor.ev', bucket: 'floor_snapshots' } as const;

/** The floor's consumer groups; `idle` (with a fourth group) acks every commit unread, as Flotilla's condenser did when it was delivered every commit. */
export type FloorGroup = 'deciders' | 'runners' | 'projectors' | 'idle';

export type FloorCommit =
  | { readonly type: 'message' | 'finish'; readonly step: number }
  | { readonly type: 'action' | 'started' | 'observation'; readonly step: number; readonly callId: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const conversationOf = (message: JsMsg): string => message.subject.slice(FLOOR.prefix.length + 1);
export const readCommit = (message: JsMsg): FloorCommit => JSON.parse(decoder.decode(message.data)) as FloorCommit;

/** Appends `commit` after the commit at stream sequence `after` (0: the conversation's first); resolves with its stream sequence. */
export async function append(js: JetStreamClient, conversation: string, commit: FloorCommit, after: number): Promise<number> {
  const ack = await js.publish(`${FLOOR.prefix}.${conversation}`, encoder.encode(JSON.stringify(commit)), { expect: { lastSubjectSequence: after } });
  return ack.seq;
}

/**
 * Hands every message of the group's durable consumer to `handle` as it comes (concurrently, as
 * Flotilla's groups do), acking each once `handle` resolves.
 */
export async function consumeGroup(nc: NatsConnection, group: FloorGroup, handle: (message: JsMsg) => Promise<void>): Promise<void> {
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
