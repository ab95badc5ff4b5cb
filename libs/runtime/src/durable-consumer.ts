import { AckPolicy, DeliverPolicy, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import {
  groupConsumerNames,
  groupConsumers,
  PARTITION_PRIORITY_GROUP,
  partitionPriorities,
  partitionPriority,
} from '@flotilla/bus';
import type { PartitionPull } from './commit-consumer.js';

export type DurableConsumerSpec = {
  readonly stream: string;
  /** The service group: every instance of a service shares this durable consumer. */
  readonly name: string;
  /** The subjects it is delivered (one, or several that do not overlap). */
  readonly filterSubjects: readonly string[];
  readonly ackWaitMs: number;
  /** Unacknowledged commits in flight across the whole group (size it to the group's concurrency). */
  readonly maxAckPending: number;
  /** A partition's consumer: its pulls carry priorities in this group (nats-server's `prioritized` policy). */
  readonly priorityGroup?: string;
};

const CONSUMER_NOT_FOUND = 10014;

/**
 * Creates the group's durable pull consumer, or updates the settings that may change (its
 * filters among them: a group delivered fewer kinds than an older version's). Every commit on its
 * subjects reaches the group (deliver all, explicit acks, unlimited redeliveries).
 */
export async function ensureDurableConsumer(jsm: JetStreamManager, spec: DurableConsumerSpec): Promise<void> {
  const existing = await jsm.consumers.info(spec.stream, spec.name).catch((error: unknown) => {
    if (error instanceof JetStreamApiError && error.code === CONSUMER_NOT_FOUND) return undefined;
    throw error;
  });
  if (!existing) {
    await jsm.consumers.add(spec.stream, {
      durable_name: spec.name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ...filters(spec.filterSubjects),
      ack_wait: nanos(spec.ackWaitMs),
      max_ack_pending: spec.maxAckPending,
      max_deliver: -1,
      // the body comes with the wake-up: a service holding the conversation in its cache extends
      // it from the delivered commit instead of reading it back from the log
      headers_only: false,
      ...(spec.priorityGroup ? { priority_groups: [spec.priorityGroup], priority_policy: 'prioritized' } : {}),
    });
    return;
  }
  const current =
    existing.config.filter_subjects ?? (existing.config.filter_subject ? [existing.config.filter_subject] : []);
  const sameFilters =
    current.length === spec.filterSubjects.length && spec.filterSubjects.every((subject) => current.includes(subject));
  if (
    !sameFilters ||
    existing.config.ack_wait !== nanos(spec.ackWaitMs) ||
    existing.config.max_ack_pending !== spec.maxAckPending ||
    existing.config.headers_only === true
  ) {
    await jsm.consumers.update(spec.stream, spec.name, {
      ack_wait: nanos(spec.ackWaitMs),
      max_ack_pending: spec.maxAckPending,
      headers_only: false,
      ...filters(spec.filterSubjects),
    });
  }
}

/** One filter as `filter_subject` (what nats-server answers for a single one), several as `filter_subjects`. */
function filters(subjects: readonly string[]): { filter_subject?: string; filter_subjects?: string[] } {
  return subjects.length === 1
    ? { filter_subject: subjects[0]!, filter_subjects: [] }
    : { filter_subject: '', filter_subjects: [...subjects] };
}

/**
 * Creates (or updates) every consumer a group pulls from on the events stream (libs/bus
 * groupConsumers: its own, and its partitions' where it has them) and returns the partitions'
 * pulls of this instance: each with its priority, among the group's `members` when known
 * (partitionPriorities), else from the instance's id alone (partitionPriority).
 */
export async function ensureGroupConsumers(
  jsm: JetStreamManager,
  spec: Omit<DurableConsumerSpec, 'name' | 'filterSubjects' | 'priorityGroup'> & {
    readonly group: string;
    readonly subjectPrefix: string;
    readonly instanceId: string;
    /** The group's live members (GroupMembers), this instance among them. */
    readonly members?: readonly string[];
  },
): Promise<PartitionPull[]> {
  const consumers = groupConsumers(spec.group, spec.subjectPrefix);
  const ranked = spec.members ? partitionPriorities(spec.instanceId, spec.members) : undefined;
  await Promise.all(
    consumers.map((each) =>
      ensureDurableConsumer(jsm, {
        stream: spec.stream,
        name: each.name,
        filterSubjects: each.filterSubjects,
        ackWaitMs: spec.ackWaitMs,
        maxAckPending: spec.maxAckPending,
        ...(each.partition === undefined ? {} : { priorityGroup: PARTITION_PRIORITY_GROUP }),
      }),
    ),
  );
  return consumers.flatMap((each) =>
    each.partition === undefined
      ? []
      : [
          {
            consumer: each.name,
            group: PARTITION_PRIORITY_GROUP,
            partition: each.partition,
            priority: ranked ? ranked[each.partition]! : partitionPriority(spec.instanceId, each.partition),
          },
        ],
  );
}

/** What a group has not handled: commits pending and unacknowledged over all its consumers (undefined when it has none). */
export async function groupBacklog(jsm: JetStreamManager, stream: string, group: string): Promise<number | undefined> {
  const infos = await Promise.all(
    groupConsumerNames(group).map((name) => jsm.consumers.info(stream, name).catch(() => undefined)),
  );
  const found = infos.filter((info) => info !== undefined);
  return found.length === 0 ? undefined : found.reduce((sum, info) => sum + info.num_pending + info.num_ack_pending, 0);
}
