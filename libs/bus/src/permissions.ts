import { answersPrefix, inboxPrefix } from './connection-options.js';
import {
  AskSubjects,
  bucketStream,
  Buckets,
  commitKindOf,
  CONDENSER_WAKEUPS,
  DELETIONS,
  everyCommit,
  DEFAULT_SIGNAL_ROOT,
  groupConsumerNames,
  DEFAULT_STREAM_NAMES,
  memberSubject,
  PARTITIONED_GROUPS,
  PURGE_SUBJECT,
  RunnerSubjects,
  SCHEDULES,
  WEBHOOK_DELIVERIES,
  type BucketRole,
  type StreamNames,
} from './layout.js';

/** The services, each with its own NATS credential; all but the gateway consume the log as a group of that name. */
export const SERVICES = [
  'gateway',
  'step-worker',
  'tool-runner',
  'condenser',
  'projector',
  'pg-sink',
  'webhooks',
  'delegator',
] as const;
export type ServiceName = (typeof SERVICES)[number];
/** Services whose instances share one durable consumer (named after the service). */
export const CONSUMER_GROUPS: readonly ServiceName[] = [
  'step-worker',
  'tool-runner',
  'condenser',
  'projector',
  'pg-sink',
  'webhooks',
  'delegator',
];
/**
 * Groups that pull from a queue of their own instead of the events stream: the stream their
 * durable consumer is on. The condenser is woken through its queue (CONDENSER_WAKEUPS); its
 * group's name on the events stream stays reserved (nobody may take it: its consumer there was
 * the one an older condenser pulled).
 */
export const GROUP_QUEUES: Readonly<Partial<Record<ServiceName, string>>> = { condenser: CONDENSER_WAKEUPS.stream };
/**
 * Services that only read the log: the projector (its read models are derived), the PostgreSQL
 * sink (analytics tables) and the webhooks service (POSTs to tenants' receivers).
 */
const READS_ONLY: readonly ServiceName[] = ['projector', 'pg-sink', 'webhooks'];
/** Readers that may not even create the events stream: they wait for it. */
const WAITS_FOR_STREAM: readonly ServiceName[] = ['pg-sink', 'webhooks'];

/**
 * Services that follow conversations live (EventLog.follow): a core subscription on a
 * conversation's subject wakes their direct-get reads. Only the gateway (its WebSockets' feeds);
 * the others read the log through their group's consumer or bounded reads.
 */
export const FOLLOWS_LOG: readonly ServiceName[] = ['gateway'];

/** True when the service's credential may append to conversations' logs. */
export function appendsToLog(service: ServiceName): boolean {
  return !READS_ONLY.includes(service);
}

/**
 * Who may connect: a service; `admin` (creates, edits, purges: the launcher and operators);
 * `tap` (reads every tenant's log, writes nothing); or a tenant's tap (reads that tenant's
 * subjects only). Each is one NATS user.
 */
export type Identity = ServiceName | 'admin' | 'tap' | { readonly tenantTap: string };

/**
 * nats-server's permissions block of one user. No user has response permissions
 * (`allow_responses`): on nats-server 2.9 they make every JetStream delivery to the user cost a
 * walk of its recent deliveries (see requestAnswer); the services that answer requests publish
 * to the asker's answers branch instead.
 */
export type Permissions = {
  readonly publish: { readonly allow: readonly string[]; readonly deny?: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[]; readonly deny?: readonly string[] };
};

/** The user name of an identity (also its inbox prefix's last token). */
export function identityName(identity: Identity): string {
  return typeof identity === 'string' ? identity : `tap-${identity.tenantTap}`;
}

const API = '$JS.API';

/** Read a stream: info, direct and message gets, and consumers of its own (ephemeral or ordered). */
function readStream(stream: string): string[] {
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.>`,
    `${API}.CONSUMER.DELETE.${stream}.>`,
    // the flow-control answers of a push consumer (a KV watch): refused, the server stalls the watch
    `$JS.FC.${stream}.>`,
  ];
}

/** Create a stream when it does not exist yet (an existing stream is never changed by a create). */
function createStream(stream: string): string[] {
  return [`${API}.STREAM.INFO.${stream}`, `${API}.STREAM.CREATE.${stream}`];
}

/** Everything one consumer group's durable consumers (its own and its partitions': groupConsumerNames) take: only its members, never deleted by them. */
function groupSubjects(stream: string, group: string): string[] {
  return consumerSubjects(stream, groupConsumerNames(group));
}

/** Create, read, pull from and ack these durable consumers of a stream (never delete them). */
function consumerSubjects(stream: string, consumers: readonly string[]): string[] {
  return consumers.flatMap((consumer) => [
    `${API}.CONSUMER.DURABLE.CREATE.${stream}.${consumer}`,
    `${API}.CONSUMER.CREATE.${stream}.${consumer}`,
    `${API}.CONSUMER.CREATE.${stream}.${consumer}.>`,
    `${API}.CONSUMER.INFO.${stream}.${consumer}`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
    `$JS.ACK.${stream}.${consumer}.>`,
  ]);
}

/** The groups' consumers as seen by someone outside them: no create, pull, ack or delete (their info may be read: the step worker checks that a condenser group exists). */
function otherGroups(stream: string, except?: string): string[] {
  return CONSUMER_GROUPS.filter((group) => group !== except).flatMap((group) => [
    ...groupSubjects(stream, group).filter((subject) => !subject.startsWith(`${API}.CONSUMER.INFO.`)),
    ...groupConsumerNames(group).map((consumer) => `${API}.CONSUMER.DELETE.${stream}.${consumer}`),
  ]);
}

export type BucketAccess = 'read' | 'write' | 'read-write' | 'write-only';

/** The buckets each service uses, and how. */
export const SERVICE_BUCKETS: Readonly<Record<ServiceName, readonly (readonly [BucketRole, BucketAccess])[]>> = {
  gateway: [
    ['snapshots', 'read-write'],
    ['apiKeys', 'read-write'],
    ['secrets', 'write-only'],
    ['secretNames', 'read-write'],
    ['runners', 'read'],
    ['workspaces', 'read'],
    ['webhooks', 'read-write'],
    ['webhookDeadLetters', 'read-write'],
    ['schedules', 'read-write'],
    // the images users send: stored, never read back (only the model callers read them)
    ['images', 'write-only'],
    // runs waiting for a slot of their tenant's: every gateway queues, starts and shows them
    ['runQueue', 'read-write'],
    // the operator's usage route
    ['tenantUsage', 'read'],
  ],
  // model keys given as secrets: the services that call a conversation's model read them
  'step-worker': [
    ['viewCheckpoints', 'read'],
    ['secrets', 'read'],
    // the images of the user messages it sends to the model
    ['images', 'read'],
    // the tenants' budgets: what their steps spent, added to as steps are appended
    ['tenantUsage', 'read-write'],
  ],
  'tool-runner': [
    ['runners', 'read-write'],
    ['workspaces', 'read-write'],
    ['secrets', 'read'],
  ],
  condenser: [['secrets', 'read']],
  projector: [
    ['snapshots', 'read-write'],
    ['viewCheckpoints', 'read-write'],
  ],
  // what it writes goes to PostgreSQL, never to NATS
  'pg-sink': [],
  // registrations it delivers to (decrypting their signing secrets with the secrets key); never the secrets bucket
  webhooks: [
    ['webhooks', 'read'],
    ['webhookDeadLetters', 'write'],
  ],
  // sub-agents: it starts children and answers their parents from the logs alone (no snapshot, no secret, no model key)
  delegator: [],
};

/** A bucket: `read` gets and watches; `write` puts and deletes; `write-only` writes and reads the stream's info, never a value. */
function bucket(role: BucketRole, access: BucketAccess): { publish: string[]; deny: string[] } {
  const name = Buckets[role];
  const stream = bucketStream(name);
  const publish = [...createStream(stream)];
  const deny: string[] = [];
  if (access === 'read' || access === 'read-write') publish.push(...readStream(stream));
  if (access === 'write' || access === 'read-write' || access === 'write-only') publish.push(`$KV.${name}.>`);
  if (access === 'write-only')
    deny.push(
      ...readStream(stream).filter((subject) => !subject.startsWith(`${API}.STREAM.INFO.`)),
      `${API}.CONSUMER.DURABLE.CREATE.${stream}.>`,
    );
  return { publish, deny };
}

/**
 * What each identity may publish and subscribe to. Derived from the layout: a service may read
 * and append to the events stream, create it when missing (never change, purge or delete it),
 * pull from and ack its own group's consumer (never another group's), use the buckets its work
 * needs, and the transient subjects it sends or receives; replies reach it under its own inbox
 * prefix only.
 */
export function permissionsFor(identity: Identity, names: StreamNames = DEFAULT_STREAM_NAMES): Permissions {
  const { stream, subjectPrefix } = names;
  const inbox = `${inboxPrefix(identityName(identity))}.>`;
  const events = everyCommit(subjectPrefix);
  const interrupts = `${DEFAULT_SIGNAL_ROOT}.interrupt.*.*`;
  const deltas = `${DEFAULT_SIGNAL_ROOT}.delta.*.*`;
  if (identity === 'admin') return { publish: { allow: ['>'] }, subscribe: { allow: ['>'] } };
  if (typeof identity === 'object') return tenantTap(identity.tenantTap, names, inbox);
  if (identity === 'tap') {
    return {
      publish: {
        allow: [
          `${API}.INFO`,
          ...readStream(stream),
          `$JS.ACK.${stream}.>`,
          ...bucket('snapshots', 'read').publish.filter((subject) => !subject.includes('.STREAM.CREATE.')),
        ],
        deny: otherGroups(stream),
      },
      subscribe: { allow: [inbox] },
    };
  }
  const service: ServiceName = identity;
  // its own inbox too: an answer to a request of another instance of the same service (a
  // forwarded wake-up) must still go out after a server restart forgot who asked
  const publish = [
    `${API}.INFO`,
    ...(WAITS_FOR_STREAM.includes(service) ? [] : createStream(stream)),
    ...readStream(stream),
    inbox,
  ];
  // every service process follows interrupts (runService), even those with nothing to cancel
  const subscribe = [inbox, interrupts];
  // answers to the gateway's requests (deletions, workspace requests) go to its answers branch, nowhere else in its inbox
  const gatewayAnswers = `${answersPrefix('gateway')}.>`;
  if (CONSUMER_GROUPS.includes(service)) publish.push(...groupSubjects(GROUP_QUEUES[service] ?? stream, service));
  // a partitioned group's instances announce themselves to each other (runtime GroupMembers)
  if (PARTITIONED_GROUPS.includes(service)) {
    publish.push(memberSubject(service));
    subscribe.push(memberSubject(service));
  }
  // its own kind of commit only (layout.ts, WRITER_KINDS): the server refuses a commit of another service's kind
  if (appendsToLog(service)) publish.push(`${subjectPrefix}.*.*.${commitKindOf(service)}`);
  // a follower's wake-ups: the publishes on conversations' subjects (every tenant's: the gateway
  // serves them all, a request confined to its tenant by its API key)
  if (FOLLOWS_LOG.includes(service)) subscribe.push(events);
  switch (service) {
    case 'gateway':
      // its announcements of conversations idle past their retention go into the webhooks' delivery queue
      publish.push(
        interrupts,
        RunnerSubjects.delete('*'),
        RunnerSubjects.deleteAny,
        RunnerSubjects.workspace('*'),
        RunnerSubjects.workspaceAny,
        PURGE_SUBJECT,
        AskSubjects.ask,
        `${WEBHOOK_DELIVERIES.subjectPrefix}.*.*`,
      );
      subscribe.push(deltas);
      // schedules: their stream (definitions written, purged to cancel; runs published by the
      // server, and by a gateway catching up a run the server skipped) and the gateways' shared
      // consumer of the runs. The purge is stream-wide, and this stream holds schedules only.
      publish.push(
        ...createStream(SCHEDULES.stream),
        ...readStream(SCHEDULES.stream),
        `${SCHEDULES.definitionPrefix}.*.*`,
        `${SCHEDULES.firePrefix}.*.*`,
        `${API}.STREAM.PURGE.${SCHEDULES.stream}`,
        ...consumerSubjects(SCHEDULES.stream, [SCHEDULES.group]),
      );
      // the notices of conversations it deleted, for the PostgreSQL sink
      publish.push(...createStream(DELETIONS.stream), `${DELETIONS.subjectPrefix}.*.*`);
      break;
    case 'step-worker':
      // side questions (POST …/ask): taken from the gateway, answered (streamed) under its answers branch;
      // the condenser's wake-ups, and whether its group is there to take them
      publish.push(
        deltas,
        gatewayAnswers,
        ...createStream(CONDENSER_WAKEUPS.stream),
        `${CONDENSER_WAKEUPS.subjectPrefix}.*.*`,
        `${API}.CONSUMER.INFO.${CONDENSER_WAKEUPS.stream}.${CONDENSER_WAKEUPS.group}`,
      );
      subscribe.push(AskSubjects.ask);
      break;
    case 'tool-runner':
      publish.push(RunnerSubjects.wake('*'), gatewayAnswers);
      subscribe.push(
        RunnerSubjects.wake('*'),
        RunnerSubjects.delete('*'),
        RunnerSubjects.deleteAny,
        RunnerSubjects.workspace('*'),
        RunnerSubjects.workspaceAny,
      );
      break;
    case 'condenser':
      // its wake-ups' queue (its group's rights on it are granted above)
      publish.push(...createStream(CONDENSER_WAKEUPS.stream));
      break;
    case 'pg-sink':
      // the notices of deleted conversations: created when missing (it may start before any gateway), pulled and acked by its group
      publish.push(...createStream(DELETIONS.stream), ...consumerSubjects(DELETIONS.stream, [DELETIONS.group]));
      break;
    case 'delegator':
      // a parent's interrupt reaches its children's in-flight work
      publish.push(interrupts);
      break;
    case 'webhooks':
      // its queue of deliveries: created, filled and consumed by it alone
      publish.push(
        ...createStream(WEBHOOK_DELIVERIES.stream),
        `${WEBHOOK_DELIVERIES.subjectPrefix}.*.*`,
        ...groupSubjects(WEBHOOK_DELIVERIES.stream, service),
      );
      break;
    case 'projector':
      // the one purge a service may do: a conversation's subject, when the gateway deletes it
      // (nats-server cannot confine a purge to a subject; this right sits with the least exposed service)
      publish.push(`${API}.STREAM.PURGE.${stream}`, gatewayAnswers);
      subscribe.push(PURGE_SUBJECT);
      break;
  }
  // a group pulling a queue of its own has no group on the events stream either
  const deny = otherGroups(stream, GROUP_QUEUES[service] ? undefined : service);
  for (const [role, access] of SERVICE_BUCKETS[service]) {
    const grant = bucket(role, access);
    publish.push(...grant.publish);
    deny.push(...grant.deny);
  }
  return {
    publish: { allow: unique(publish), deny: unique(deny) },
    subscribe: { allow: unique(subscribe) },
  };
}

/**
 * A tenant's tap: consumers filtered to the tenant's subjects (nats-server checks the filter
 * named in the create subject against the request, from 2.9), direct gets of the tenant's
 * subjects only, no stream info (it would list other tenants' subjects), no consumer listing.
 */
function tenantTap(tenant: string, names: StreamNames, inbox: string): Permissions {
  const { stream, subjectPrefix } = names;
  // both layouts: `<prefix>.<tenant>.<conversation>` (legacy) and `….<kind>`
  const own = `${subjectPrefix}.${tenant}.>`;
  return {
    publish: {
      allow: [
        `${API}.INFO`,
        `${API}.CONSUMER.CREATE.${stream}.*.${own}`,
        `${API}.CONSUMER.MSG.NEXT.${stream}.*`,
        `${API}.CONSUMER.INFO.${stream}.*`,
        `${API}.CONSUMER.DELETE.${stream}.*`,
        `$JS.ACK.${stream}.>`,
        `${API}.DIRECT.GET.${stream}.${own}`,
      ],
      deny: otherGroups(stream),
    },
    subscribe: { allow: [inbox] },
  };
}

function unique(subjects: readonly string[]): string[] {
  return [...new Set(subjects)];
}
