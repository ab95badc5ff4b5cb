import { draftEvent, newId, type EventDraft } from '@flotilla/events';
import { PARTITION_PRIORITY_GROUP, PARTITIONS, partitionPriorities } from '@flotilla/bus';
import { decodeCommit, encodeCommit, placeEvents } from '@flotilla/log';
import { PARTITION_PULL_EXPIRES_MS } from '@flotilla/runtime';
import {
  AckPolicy,
  jetstream,
  type ConsumerConfig,
  type JetStreamClient,
  type JsMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import { headers, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { Decision } from './loop.js';

/**
 * The bus floor (floor-peer.ts): the messages Flotilla's design needs per step, with none of its
 * code. A commit is a small JSON message on `<prefix>.<conversation>.<kind>` (its writer: `user`,
 * `step` for the deciders', `tool` for the runner's), appended with the optimistic-concurrency
 * check Flotilla's log makes (the last sequence of the conversation's subjects expected), in the
 * layout its spec names (FloorSpec, floorLayout).
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
  | {
      readonly type: 'action' | 'started' | 'observation';
      readonly step: number;
      readonly callId: string;
      /** The action's event id (`protocol` commits: what its start and observation name). */
      readonly actionId?: string;
    };

/**
 * What a floor's commit is: `bare`, a small JSON message with none of Flotilla's code; `protocol`,
 * a Flotilla commit (its events as the services write them, with its headers) validated as it is
 * written and as each group reads it (DESIGN.md invariant 8), through @flotilla/log's codec, which
 * any system on this protocol pays.
 */
export type FloorBody = 'bare' | 'protocol';

/** A floor: what its commits are, whom they are delivered to, how its groups consume, how many deciders and runners. */
export type FloorSpec = {
  readonly body: FloorBody;
  /** The deciders and the runners are not delivered their own kind (Flotilla's design); else every group is delivered every commit. */
  readonly filtered: boolean;
  /**
   * The protocol's layout (docs/protocol.md, "Partitions"): the stream appends each commit's
   * partition, and the deciders and the runners pull from a consumer per partition, in the
   * protocol's priority group; else one consumer per group.
   */
  readonly partitioned: boolean;
  /** Deciders and runners, each (the deciders past the first in processes of their own). */
  readonly instances: number;
};

/** The floors the peers benchmark can run, by name. */
export const FLOORS = {
  floor: { body: 'bare', filtered: true, partitioned: false, instances: 1 },
  'floor-all': { body: 'bare', filtered: false, partitioned: false, instances: 1 },
  'floor-commits': { body: 'protocol', filtered: true, partitioned: false, instances: 1 },
  'floor-commits-2x2': { body: 'protocol', filtered: true, partitioned: false, instances: 2 },
  'floor-protocol': { body: 'protocol', filtered: true, partitioned: true, instances: 1 },
  'floor-protocol-2x2': { body: 'protocol', filtered: true, partitioned: true, instances: 2 },
} as const satisfies Record<string, FloorSpec>;
export type FloorName = keyof typeof FLOORS;

/** `make` of every floor, by its name. */
export function eachFloor<T>(make: (spec: FloorSpec) => T): Record<FloorName, T> {
  const names = Object.keys(FLOORS) as FloorName[];
  return Object.fromEntries(names.map((name) => [name, make(FLOORS[name])])) as Record<FloorName, T>;
}

/** A floor's title, from what it is. */
export function floorTitle(spec: FloorSpec): string {
  return [
    spec.filtered ? 'bus floor, kinds filtered' : 'bus floor, every commit to every group',
    ...(spec.body === 'protocol' ? ["Flotilla's commits validated"] : []),
    ...(spec.body === 'protocol' && !spec.partitioned ? ['one consumer per group'] : []),
    ...(spec.partitioned ? [`${PARTITIONS} partitions`] : []),
    ...(spec.instances > 1 ? [`${spec.instances} deciders + ${spec.instances} runners`] : []),
  ].join(', ');
}

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
export const readCommit = (message: JsMsg, body: FloorBody = 'bare'): FloorCommit =>
  body === 'bare' ? (JSON.parse(decoder.decode(message.data)) as FloorCommit) : readProtocolCommit(message);

const TENANT = 'floor';
// a conversation's events: its first message at seq 1, then per step s an action (or the finish) at
// 2 + 3s, its start at 3 + 3s and its observation at 4 + 3s
const FIRST_SEQ: Readonly<Record<FloorCommit['type'], number>> = {
  message: 1,
  action: 2,
  finish: 2,
  started: 3,
  observation: 4,
};

function protocolDrafts(conversation: string, commit: FloorCommit): EventDraft[] {
  const ref = { tenant: TENANT, conversation };
  switch (commit.type) {
    case 'message':
      return [
        draftEvent({ ...ref, source: 'user' }, 'message', { role: 'user', content: [{ type: 'text', text: 'go' }] }),
      ];
    case 'finish':
      return [draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'finished', reason: 'done' })];
    case 'action':
      return [
        draftEvent({ ...ref, source: 'agent' }, 'action', {
          tool_call_id: commit.callId,
          tool_name: 'think',
          arguments: '{"thought":"plan the next move"}',
          input: { thought: 'plan the next move' },
          thought: [],
          response_id: `resp-${commit.step}`,
          security_risk: 'low',
        }),
      ];
    case 'started':
      return [
        draftEvent({ ...ref, source: 'system' }, 'execution_started', {
          action_ids: [commit.actionId!],
          runner: 'floor',
        }),
      ];
    case 'observation':
      return [
        draftEvent({ ...ref, source: 'environment', parent: commit.actionId! }, 'observation', {
          action_id: commit.actionId!,
          tool_call_id: commit.callId,
          tool_name: 'think',
          content: [{ type: 'text', text: 'Your thought has been logged.' }],
          is_error: false,
        }),
      ];
  }
}

function encodeProtocolCommit(conversation: string, commit: FloorCommit): { data: Uint8Array; headers: MsgHdrs } {
  const ref = { tenant: TENANT, conversation };
  const lastSeq = FIRST_SEQ[commit.type] - 1 + (commit.type === 'message' ? 0 : 3 * commit.step);
  return encodeCommit(newId(), ref, placeEvents(ref, protocolDrafts(conversation, commit), lastSeq));
}

function readProtocolCommit(message: JsMsg): FloorCommit {
  const decoded = decodeCommit(message, { tenant: TENANT, conversation: conversationOf(message) });
  if (!decoded.ok) throw new Error(`the floor read a commit it could not decode: ${decoded.reason}`);
  const event = decoded.commit.events[0]!;
  const step = (first: number): number => (event.seq - first) / 3;
  switch (event.type) {
    case 'message':
      return { type: 'message', step: 0 };
    case 'state_change':
      return { type: 'finish', step: step(FIRST_SEQ.finish) };
    case 'action':
      return { type: 'action', step: step(FIRST_SEQ.action), callId: event.tool_call_id, actionId: event.id };
    case 'execution_started':
      return { type: 'started', step: step(FIRST_SEQ.started), callId: '', actionId: event.action_ids[0]! };
    case 'observation':
      return {
        type: 'observation',
        step: step(FIRST_SEQ.observation),
        callId: event.tool_call_id,
        actionId: event.action_id,
      };
    default:
      throw new Error(`the floor read a commit of ${event.type}`);
  }
}

/** Appends `commit` after the commit at stream sequence `after` (0: the conversation's first); resolves with its stream sequence. */
export async function append(
  js: JetStreamClient,
  conversation: string,
  commit: FloorCommit,
  after: number,
  body: FloorBody = 'bare',
): Promise<number> {
  const encoded =
    body === 'bare'
      ? { data: encoder.encode(JSON.stringify(commit)), headers: headers() }
      : encodeProtocolCommit(conversation, commit);
  encoded.headers.set('Nats-Expected-Last-Subject-Sequence', String(after));
  encoded.headers.set('Nats-Expected-Last-Subject-Sequence-Subject', `${FLOOR.prefix}.${conversation}.>`);
  const ack = await js.publish(`${FLOOR.prefix}.${conversation}.${KIND[commit.type]}`, encoded.data, {
    headers: encoded.headers,
  });
  return ack.seq;
}

/** Every kind of commit on the floor's bus (KIND's values). */
const KINDS = ['user', 'step', 'tool'] as const;

/** The kinds a group is delivered: every kind, or with `filtered`, every kind but its own (OWN_KIND). */
const deliveredKinds = (group: FloorGroup, filtered: boolean): string[] =>
  KINDS.filter((kind) => !filtered || kind !== OWN_KIND[group]);

/** The groups that pull from a consumer per partition in a partitioned layout, as Flotilla's step workers and tool runners do (libs/bus PARTITIONED_GROUPS). */
const PARTITIONED: readonly FloorGroup[] = ['deciders', 'runners'];

type FloorConsumer = { readonly name: string; readonly filters: readonly string[]; readonly partition?: number };

/**
 * The floor's stream and consumers: one stream on `<prefix>.<conversation>.<kind>`; unpartitioned,
 * one durable consumer per group; partitioned (the protocol's layout), the stream's subject
 * transform appends the conversation's partition (of PARTITIONS), the deciders and the runners
 * each have a consumer per partition in the protocol's priority group (nats-server's
 * `prioritized` policy), the projector one.
 */
export function floorLayout({ filtered, partitioned }: FloorSpec) {
  const consumers = (group: FloorGroup): FloorConsumer[] => {
    const kinds = deliveredKinds(group, filtered);
    if (!partitioned || !PARTITIONED.includes(group))
      // a group delivered every kind takes the whole stream, as Flotilla's projector does (libs/bus groupFilterSubjects)
      return [
        {
          name: group,
          filters:
            kinds.length === KINDS.length
              ? [`${FLOOR.prefix}.>`]
              : kinds.map((kind) => `${FLOOR.prefix}.*.${kind}${partitioned ? '.*' : ''}`),
        },
      ];
    return Array.from({ length: PARTITIONS }, (_, partition) => ({
      name: `${group}-p${partition}`,
      filters: kinds.map((kind) => `${FLOOR.prefix}.*.${kind}.${partition}`),
      partition,
    }));
  };
  return {
    stream: {
      name: FLOOR.stream,
      subjects: [`${FLOOR.prefix}.*.*`],
      ...(partitioned
        ? {
            subject_transform: {
              src: `${FLOOR.prefix}.*.*`,
              dest: `${FLOOR.prefix}.{{wildcard(1)}}.{{wildcard(2)}}.{{partition(${PARTITIONS},1)}}`,
            },
          }
        : {}),
    } satisfies Partial<StreamConfig>,
    consumers,
    /** Every consumer's configuration, to create them with. */
    configs: (): Partial<ConsumerConfig>[] =>
      (['deciders', 'runners', 'projectors'] as const).flatMap((group) =>
        consumers(group).map((consumer) => ({
          durable_name: consumer.name,
          ack_policy: AckPolicy.Explicit,
          max_ack_pending: 10_000,
          ...(consumer.filters.length === 1
            ? { filter_subject: consumer.filters[0]! }
            : { filter_subjects: [...consumer.filters] }),
          ...(consumer.partition === undefined
            ? {}
            : { priority_groups: [PARTITION_PRIORITY_GROUP], priority_policy: 'prioritized' as const }),
        })),
      ),
  };
}

/**
 * Hands every message of the group's consumers to `handle` as it comes (concurrently, as
 * Flotilla's groups do), acking each once `handle` resolves. A partition's consumer is pulled from
 * with this process's priority on it: the protocol's partitionPriorities among the group's
 * instances (`spec.instances` of them, this one the `index`th), as Flotilla's instances rank
 * themselves once they have heard each other.
 */
export async function consumeGroup(
  nc: NatsConnection,
  group: FloorGroup,
  spec: FloorSpec,
  index: number,
  handle: (message: JsMsg) => Promise<void>,
): Promise<void> {
  const js = jetstream(nc);
  const members = Array.from({ length: spec.instances }, (_, each) => `floor-${group}-${each}`);
  const priorities = partitionPriorities(members[index]!, members);
  for (const consumer of floorLayout(spec).consumers(group)) {
    const messages = await (
      await js.consumers.get(FLOOR.stream, consumer.name)
    ).consume({
      max_messages: 1_000,
      ...(consumer.partition === undefined
        ? {}
        : {
            group: PARTITION_PRIORITY_GROUP,
            priority: priorities[consumer.partition]!,
            // as long as Flotilla's step workers and tool runners wait: how long a stopped instance keeps its partitions
            expires: PARTITION_PULL_EXPIRES_MS,
          }),
    });
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
}

/**
 * A conversation's name on the floor's bus carries the steps it runs, so that any decider, in any
 * process, decides from the commit it is delivered alone, holding no state.
 */
export const busConversation = (conversation: string, maxSteps: number): string => `${conversation}-m${maxSteps}`;
const stepsOf = (bus: string): number => Number(bus.slice(bus.lastIndexOf('-m') + 2));
export const loopConversation = (bus: string): string => bus.slice(0, bus.lastIndexOf('-m'));

export type DeciderHooks = {
  model(conversation: string, step: number, maxSteps: number): Promise<Decision>;
  /** The observation of step `step`'s call was read: its tool ran. */
  ran(conversation: string, callId: string, step: number): void;
  /** The decider appended the conversation's finish. */
  finished(conversation: string): void;
};

/** The deciders' group, in this process: a conversation's first message or an observation decides the next step (conversations by their bus names). */
export function consumeAsDecider(
  nc: NatsConnection,
  spec: FloorSpec,
  index: number,
  hooks: DeciderHooks,
): Promise<void> {
  const js = jetstream(nc);
  const { body } = spec;
  return consumeGroup(nc, 'deciders', spec, index, async (message) => {
    const commit = readCommit(message, body);
    if (commit.type !== 'message' && commit.type !== 'observation') return;
    const conversation = conversationOf(message);
    if (commit.type === 'observation') hooks.ran(conversation, commit.callId, commit.step);
    const step = commit.type === 'message' ? 0 : commit.step + 1;
    const decision = await hooks.model(conversation, step, stepsOf(conversation));
    if (decision.kind === 'finish') {
      await append(js, conversation, { type: 'finish', step }, message.seq, body);
      hooks.finished(conversation);
    } else await append(js, conversation, { type: 'action', step, callId: decision.callId }, message.seq, body);
  });
}
