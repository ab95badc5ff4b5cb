/**
 * Every name Flotilla uses on NATS, in one place: the events stream and its subjects, the KV
 * buckets, and the core subjects of traffic that is never stored. The libs that use a name take
 * it from here, and the permissions of each service (permissions.ts) are derived from it.
 */
import { createHash } from 'node:crypto';

export const DEFAULT_STREAM_NAME = 'FLOTILLA_EVENTS';
export const DEFAULT_SUBJECT_PREFIX = 'flotilla.ev';

/**
 * The kind of a commit: who wrote it, as the last token of its subject
 * (`<prefix>.<tenant>.<conversation>.<kind>`). A service may publish only its own kind (the server
 * refuses the others: permissions.ts), so a commit's subject says which service's credential
 * wrote it, and a group's consumer can leave out the kinds it is never owed work by (GROUP_KINDS).
 * Optimistic concurrency stays conversation-wide: an append expects the last sequence of
 * `<prefix>.<tenant>.<conversation>.>`, whatever the kinds.
 */
export const COMMIT_KINDS = ['user', 'step', 'tool', 'condense', 'delegate'] as const;
export type CommitKind = (typeof COMMIT_KINDS)[number];

/** The kind each writing service appends; anyone else (the admin, tests, an in-process agent) appends `user`. */
export const WRITER_KINDS = {
  gateway: 'user',
  'step-worker': 'step',
  'tool-runner': 'tool',
  condenser: 'condense',
  delegator: 'delegate',
} as const satisfies Record<string, CommitKind>;
export type CommitWriter = keyof typeof WRITER_KINDS;

/** The kind a writer appends (`user` for any writer that is not a service of WRITER_KINDS). */
export function commitKindOf(writer: string | undefined): CommitKind {
  return writer !== undefined && Object.hasOwn(WRITER_KINDS, writer) ? WRITER_KINDS[writer as CommitWriter] : 'user';
}

export function isCommitKind(value: string): value is CommitKind {
  return (COMMIT_KINDS as readonly string[]).includes(value);
}

/**
 * Groups that are not delivered their own kind: each carries on after its own commits in the
 * process that wrote them, before acknowledging the commit that woke it (libs/runtime
 * `carryOnAfterOwnCommits`), so a commit of theirs can never be the only wake-up they are owed.
 * Every other group is delivered every kind.
 */
export const SELF_CONTINUING: Readonly<Partial<Record<string, CommitKind>>> = {
  'step-worker': 'step',
  'tool-runner': 'tool',
};

/** The kinds a group's consumer is delivered. */
export function groupKinds(group: string): readonly CommitKind[] {
  const own = SELF_CONTINUING[group];
  return COMMIT_KINDS.filter((kind) => kind !== own);
}

/**
 * The subjects a group's own consumer filters on: every commit (`<prefix>.>`), or the legacy
 * layout's and `<prefix>.*.*.<kind>` (stored before the stream partitioned commits) for each kind
 * the group is delivered.
 */
export function groupFilterSubjects(group: string, prefix: string): string[] {
  const kinds = groupKinds(group);
  return kinds.length === COMMIT_KINDS.length
    ? [`${prefix}.>`]
    : [legacyCommitSubjects(prefix), ...kinds.map((kind) => `${prefix}.*.*.${kind}`)];
}

/**
 * Conversations are spread over PARTITIONS partitions by nats-server itself: the events stream's
 * subject transform (commitSubjectTransform) stores each commit at
 * `<prefix>.<tenant>.<conversation>.<kind>.<partition>`, the partition a hash of tenant and
 * conversation. A group that caches conversations (PARTITIONED_GROUPS) has a consumer per
 * partition besides its own, each in a priority group: every instance pulls from every partition
 * with a priority of its own per partition (partitionPriorities), and the server delivers a
 * partition's commits to the live instance with the best one, so a conversation's commits reach
 * one instance while it lives and has room, and move to the next at once when it dies or is
 * full. A protocol constant: the consumers' names carry the partition and the permissions name
 * each of them.
 */
export const PARTITIONS = 16;

/** The groups delivered through partition consumers: those whose instances hold conversations in a cache. */
export const PARTITIONED_GROUPS: readonly string[] = ['step-worker', 'tool-runner'];

/** The priority group of every partition consumer (nats-server's `prioritized` policy). */
export const PARTITION_PRIORITY_GROUP = 'holders';

/** The priorities nats-server's `prioritized` policy takes (0 is served first). */
const PRIORITY_LEVELS = 10;

/** How the events stream stores what is published on `<prefix>.<tenant>.<conversation>.<kind>`: with the partition appended. */
export function commitSubjectTransform(prefix: string): { readonly src: string; readonly dest: string } {
  return {
    src: commitSubjects(prefix),
    dest: `${prefix}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}.{{partition(${PARTITIONS},1,2)}}`,
  };
}

/** A consumer a group pulls from: the group's own, or one of its partitions'. */
export type GroupConsumer = {
  readonly name: string;
  readonly filterSubjects: readonly string[];
  readonly partition?: number;
};

/**
 * Every consumer a group pulls from. First the group's own (named after it), delivered what the
 * stream holds outside the partitions (the legacy layout, and commits stored before the stream
 * partitioned them) or, for a group delivered every kind, everything; then, for a partitioned
 * group, one per partition, filtered to its kinds in that partition.
 */
export function groupConsumers(group: string, prefix: string): GroupConsumer[] {
  const own: GroupConsumer = { name: group, filterSubjects: groupFilterSubjects(group, prefix) };
  if (!PARTITIONED_GROUPS.includes(group)) return [own];
  const kinds = groupKinds(group);
  return [
    own,
    ...Array.from({ length: PARTITIONS }, (_, partition) => ({
      name: partitionConsumerName(group, partition),
      filterSubjects: kinds.map((kind) => `${prefix}.*.*.${kind}.${partition}`),
      partition,
    })),
  ];
}

/** The names of every consumer a group pulls from (its permissions name each). */
export function groupConsumerNames(group: string): string[] {
  return groupConsumers(group, 'x').map((consumer) => consumer.name);
}

function partitionConsumerName(group: string, partition: number): string {
  return `${group}-p${partition}`;
}

/**
 * An instance's priority on a partition from its score alone (partitionScore modulo
 * PRIORITY_LEVELS), for a pull whose group's members are not known (the services know them:
 * partitionPriorities). Two instances tie on a partition one time in PRIORITY_LEVELS, on about 1.6
 * of 16, and share its commits.
 */
export function partitionPriority(instanceId: string, partition: number): number {
  return partitionScore(instanceId, partition) % PRIORITY_LEVELS;
}

/** An instance's score on a partition: SHA-256 of its id and the partition, so its scores on different partitions are independent. */
function partitionScore(instanceId: string, partition: number): number {
  return createHash('sha256').update(`${instanceId}#${partition}`).digest().readUInt32BE(0);
}

/**
 * Each partition's members in rank order (`members` deduplicated). Its owner comes first: the
 * member of best score on it (partitionScore) among those that own fewer than
 * ⌈PARTITIONS / members⌉ of the partitions before it, so the owners are spread evenly; the other
 * members follow the owner in order of score. Instances that see the same members agree.
 */
function rankPartitions(members: Iterable<string>): string[][] {
  const all = [...new Set(members)].sort();
  const most = Math.ceil(PARTITIONS / all.length);
  const owned = new Map<string, number>();
  return Array.from({ length: PARTITIONS }, (_, partition) => {
    const scores = new Map(all.map((member) => [member, partitionScore(member, partition)]));
    const ranked = [...all].sort((a, b) => scores.get(b)! - scores.get(a)! || (a < b ? -1 : 1));
    const owner = ranked.find((member) => (owned.get(member) ?? 0) < most)!;
    owned.set(owner, (owned.get(owner) ?? 0) + 1);
    return [owner, ...ranked.filter((member) => member !== owner)];
  });
}

/**
 * An instance's priority on each partition among its group's live members (itself counted whether
 * listed or not; announced on memberSubject): 0 on the partitions it owns, its place after the
 * owner elsewhere (rankPartitions). No two tie on a partition, and a partition's next in line is
 * known when its owner dies.
 */
export function partitionPriorities(instanceId: string, members: Iterable<string>): number[] {
  return rankPartitions([...members, instanceId]).map((ranked) =>
    Math.min(ranked.indexOf(instanceId), PRIORITY_LEVELS - 1),
  );
}

/** Each partition's owner among the group's live members (an empty list: none). */
export function partitionOwners(members: Iterable<string>): string[] {
  const all = [...members];
  return all.length === 0 ? [] : rankPartitions(all).map((ranked) => ranked[0]!);
}

/** The core subject on which a partitioned group's instances announce that they are alive, or leaving. */
export function memberSubject(group: string): string {
  return `flotilla.members.${group}`;
}

/** Every commit of every conversation, as a reader that follows them all subscribes to it (its tokens after the conversation's may grow). */
export function everyCommit(prefix: string): string {
  return `${prefix}.*.*.>`;
}

/**
 * Every commit's subject in the events stream (`<prefix>.<tenant>.<conversation>.<kind>`). Logs
 * written before commits carried their kind are on `<prefix>.<tenant>.<conversation>`
 * (LEGACY_SUBJECTS): still read, never written.
 */
export function commitSubjects(prefix: string): string {
  return `${prefix}.*.*.*`;
}

/** The subjects of commits written before kinds were in the subject: read, never appended to. */
export function legacyCommitSubjects(prefix: string): string {
  return `${prefix}.*.*`;
}

export const Buckets = {
  /** Conversation snapshots (read model, rebuilt from the log). */
  snapshots: 'flotilla_conversations',
  /** Encrypted secret values: only the tool runner reads them. */
  secrets: 'flotilla_secrets',
  /** Secret names (no values): the gateway lists them. */
  secretNames: 'flotilla_secret_names',
  /** SHA-256 of each API key → tenant. */
  apiKeys: 'flotilla_api_keys',
  /** Tool-runner heartbeats (entries expire). */
  runners: 'flotilla_runners',
  /** Which tool runner owns which workspace. */
  workspaces: 'flotilla_workspaces',
  /** Each conversation's view (and what a step decides from) at its last condensation: derived, rebuilt from the log. */
  viewCheckpoints: 'flotilla_view_checkpoints',
  /** Each tenant's webhook registrations (the signing secret encrypted with the secrets key): written by the gateway, read by the webhooks service. */
  webhooks: 'flotilla_webhooks',
  /** Webhook deliveries that failed every attempt: written by the webhooks service, read over REST. */
  webhookDeadLetters: 'flotilla_webhook_dead_letters',
  /** Images of user messages by tenant and SHA-256 (`<tenant>.<sha256>.<chunk>`): the gateway writes them, step workers read them. */
  images: 'flotilla_images',
  /** Each tenant's schedules (what to do, when, paused or not, the last run's outcome): written by the gateway. */
  schedules: 'flotilla_schedules',
  /** Runs waiting for a slot of their tenant's, `<tenant>.<conversation>` → when queued: the gateways' shared queue. */
  runQueue: 'flotilla_run_queue',
  /** What each tenant's steps spent per UTC day and month (`<tenant>.day.<date>`, `<tenant>.month.<month>`): step workers add, the gateway reads. */
  tenantUsage: 'flotilla_tenant_usage',
} as const;
export type BucketRole = keyof typeof Buckets;

/** The stream behind a KV bucket. */
export function bucketStream(bucket: string): string {
  return `KV_${bucket}`;
}

/** Core subjects of interrupts and token deltas: `<root>.interrupt|delta.<tenant>.<conversation>`. */
export const DEFAULT_SIGNAL_ROOT = 'flotilla.signal';

/** Core subjects tool runners answer on. */
export const RunnerSubjects = {
  /** A wake-up forwarded to the runner that owns the workspace. */
  wake: (runner: string): string => `flotilla.runner.${runner}.wake`,
  /** Delete a conversation's workspace, sandbox and ownership on the runner that owns it. */
  delete: (runner: string): string => `flotilla.runner.${runner}.delete`,
  /** The same, answered by any one runner (the queue group below) when the owner is gone. */
  deleteAny: 'flotilla.runners.delete',
  deleteQueue: 'flotilla-runners',
  /** A request about a conversation's workspace (list, read or write a file, git status or diff) to the runner that owns it. */
  workspace: (runner: string): string => `flotilla.runner.${runner}.workspace`,
  /** The same, taken by any one runner (the queue group above) when no live runner owns the workspace: it claims the workspace first. */
  workspaceAny: 'flotilla.runners.workspace',
} as const;

/**
 * A side question about a conversation (POST …/ask), from the gateway to any one step worker
 * (queue group `flotilla-askers`), which answers from the conversation's view with its model and
 * streams the answer back under the gateway's answers branch. Nothing is appended to the log.
 */
export const AskSubjects = { ask: 'flotilla.ask', queue: 'flotilla-askers' } as const;

/** The core subject on which the projector removes one conversation's log (the only purge a service may ask for). */
export const PURGE_SUBJECT = 'flotilla.projector.purge';

/**
 * The webhooks service's queue of deliveries still to make (a work queue: a delivery leaves it
 * when it is done or dead-lettered), one subject per webhook: `<prefix>.<tenant>.<webhook>`.
 * Only the webhooks service touches it.
 */
export const WEBHOOK_DELIVERIES = { stream: 'FLOTILLA_WEBHOOK_DELIVERIES', subjectPrefix: 'flotilla.webhook' } as const;

/**
 * The condenser's wake-ups (a work queue, one subject per conversation:
 * `<prefix>.<tenant>.<conversation>`). The condenser is not delivered the log's commits: a step
 * worker, which decides from the log at every tail anyway, puts a wake-up here when a
 * conversation waits for a condensation or is owed a title, before it acknowledges the commit
 * it decided that at; the condenser decides from the log at the conversation's tail, and a
 * wake-up leaves the queue once nothing it can do is owed. Step workers publish, the condenser
 * consumes (its group `condenser`).
 */
export const CONDENSER_WAKEUPS = {
  stream: 'FLOTILLA_CONDENSER_WAKEUPS',
  subjectPrefix: 'flotilla.wake.condenser',
  group: 'condenser',
} as const;

/**
 * Schedules on nats-server's message scheduler (2.14+): the stream holds each schedule's
 * definition on `<definitions>.<tenant>.<schedule>` (a stored message whose subject is the
 * schedule's identity: republishing it replaces the schedule, purging it cancels) and the server
 * publishes each run on `<fires>.<tenant>.<schedule>` in the same stream, one message kept per
 * subject (runs nobody took yet collapse into one). The gateways create the stream and take the
 * runs through one durable consumer (`group`) they share.
 */
export const SCHEDULES = {
  stream: 'FLOTILLA_SCHEDULES',
  definitionPrefix: 'flotilla.sched',
  firePrefix: 'flotilla.fire',
  group: 'gateway-schedules',
} as const;

/**
 * Notices of conversations deleted (by a user or their retention), one subject per conversation:
 * `<prefix>.<tenant>.<conversation>`. The gateway publishes one after the conversation's log is
 * purged; the PostgreSQL sink, which keeps its own copy of every log, reads them through its group
 * and keeps or drops its rows by its setting (docs/analytics.md, "Deleted conversations"). Kept for
 * `maxAgeDays`: a sink stopped longer than that misses the notices of that time.
 */
export const DELETIONS = {
  stream: 'FLOTILLA_DELETIONS',
  subjectPrefix: 'flotilla.deleted',
  group: 'pg-sink',
  maxAgeDays: 30,
} as const;

/** The events stream's names a deployment chose (FLOTILLA_STREAM, FLOTILLA_SUBJECT_PREFIX). */
export type StreamNames = { readonly stream: string; readonly subjectPrefix: string };

export const DEFAULT_STREAM_NAMES: StreamNames = { stream: DEFAULT_STREAM_NAME, subjectPrefix: DEFAULT_SUBJECT_PREFIX };
