import { answersPrefix } from './connection-options.js';
import {
  Buckets,
  commitKindOf,
  CONDENSER_WAKEUPS,
  DELETIONS,
  DEFAULT_SIGNAL_ROOT,
  DEFAULT_STREAM_NAMES,
  PARTITIONS,
  PURGE_SUBJECT,
  RunnerSubjects,
  SCHEDULES,
  SELF_CONTINUING,
  WEBHOOK_DELIVERIES,
} from './layout.js';
import {
  appendsToLog,
  CONSUMER_GROUPS,
  GROUP_QUEUES,
  permissionsFor,
  SERVICE_BUCKETS,
  SERVICES,
  type Identity,
  type ServiceName,
} from './permissions.js';

const ACCESS_WORDS = {
  read: 'reads',
  write: 'writes',
  'read-write': 'reads, writes',
  'write-only': 'writes, never reads',
} as const;

/** What each service may do besides reading the log and creating the stream if missing, in words. */
const EXTRA: Readonly<Record<ServiceName, string>> = {
  gateway: `publishes interrupts (\`${DEFAULT_SIGNAL_ROOT}.interrupt.*.*\`), deletion requests (\`${RunnerSubjects.delete('*')}\`, \`${RunnerSubjects.deleteAny}\`, \`${PURGE_SUBJECT}\`), workspace requests (\`${RunnerSubjects.workspace('*')}\`, \`${RunnerSubjects.workspaceAny}\`: files, git), the announcements of conversations idle past their retention into the webhooks' delivery queue (\`${WEBHOOK_DELIVERIES.subjectPrefix}.<tenant>.<webhook>\`); receives token deltas, and the conversations' commits as they are published (\`${DEFAULT_STREAM_NAMES.subjectPrefix}.*.*.>\`: what wakes its live follows, which read the stream with direct gets, no consumer); schedules: creates the stream \`${SCHEDULES.stream}\` when missing, publishes definitions (\`${SCHEDULES.definitionPrefix}.<tenant>.<schedule>\`) and caught-up runs (\`${SCHEDULES.firePrefix}.<tenant>.<schedule>\`), purges that stream (cancelling a schedule), pulls and acks the runs through the gateways' consumer \`${SCHEDULES.group}\`; publishes the notices of the conversations it deleted (\`${DELETIONS.subjectPrefix}.<tenant>.<conversation>\`, creating the stream \`${DELETIONS.stream}\` when missing)`,
  'step-worker': `publishes token deltas and the condenser's wake-ups (\`${CONDENSER_WAKEUPS.subjectPrefix}.<tenant>.<conversation>\`, creating the stream \`${CONDENSER_WAKEUPS.stream}\` when missing) and reads its group's consumer info`,
  'tool-runner': `receives wake-ups, deletions and workspace requests (\`${RunnerSubjects.wake('*')}\`, \`${RunnerSubjects.delete('*')}\`, \`${RunnerSubjects.deleteAny}\`, \`${RunnerSubjects.workspace('*')}\`, \`${RunnerSubjects.workspaceAny}\`), forwards wake-ups; answers the gateway's deletions and workspace requests under \`${answersPrefix('gateway')}.>\``,
  condenser: `pulls and acks its wake-ups from \`${CONDENSER_WAKEUPS.stream}\` (creating it when missing), not the events stream's commits`,
  projector: `purges one conversation's subject on the gateway's request (\`${PURGE_SUBJECT}\`), answered under \`${answersPrefix('gateway')}.>\`: the only purge of the events stream a service holds`,
  'pg-sink': `reads the log into PostgreSQL, and may not create the events stream (it waits for it); pulls and acks the notices of deleted conversations (\`${DELETIONS.stream}\`, creating it when missing) through its consumer \`${DELETIONS.group}\``,
  delegator: `publishes interrupts (\`${DEFAULT_SIGNAL_ROOT}.interrupt.*.*\`: a parent's interrupt stops its sub-agents' work); no bucket: it starts child conversations and answers their parents from the logs alone`,
  webhooks: `its queue of deliveries, the stream \`${WEBHOOK_DELIVERIES.stream}\` (\`${WEBHOOK_DELIVERIES.subjectPrefix}.<tenant>.<webhook>\`): creates, publishes to, pulls and acks its own group; may not create the events stream (it waits for it)`,
};

/**
 * The permission matrix as Markdown, derived from `permissionsFor`: docs/operations.md carries
 * it between markers, and a test checks that it is the current one.
 */
export function permissionsMarkdown(): string {
  const { stream, subjectPrefix } = DEFAULT_STREAM_NAMES;
  const rows = SERVICES.map((service) => {
    const buckets =
      SERVICE_BUCKETS[service].map(([role, access]) => `\`${Buckets[role]}\` (${ACCESS_WORDS[access]})`).join(', ') ||
      '—';
    const appends = appendsToLog(service) ? `\`${commitKindOf(service)}\` commits only` : 'no';
    const queue = GROUP_QUEUES[service];
    const own = SELF_CONTINUING[service];
    const group = CONSUMER_GROUPS.includes(service)
      ? `\`${service}\`${queue ? ` (on \`${queue}\`)` : own ? ` (every kind but its own \`${own}\`)` : ''}`
      : '—';
    return `| ${service} | ${appends} | ${group} | ${buckets} | ${EXTRA[service]} |`;
  });
  const raw = (identity: Identity, title: string): string => {
    const permissions = permissionsFor(identity);
    return [
      `<details><summary>${title}</summary>`,
      '',
      '```json',
      JSON.stringify(collapsePartitions(permissions), null, 2),
      '```',
      '',
      '</details>',
    ].join('\n');
  };
  return [
    `Every identity may read the events stream \`${stream}\` (commits are published on \`${subjectPrefix}.<tenant>.<conversation>.<kind>\` and stored with their partition appended, \`….<kind>.<partition>\`; \`${subjectPrefix}.<tenant>.<conversation>.<kind>\` and \`${subjectPrefix}.<tenant>.<conversation>\` hold commits stored before partitions and kinds were in the subject) and receive replies under its own inbox prefix \`_INBOX.<user>.>\`; every service receives interrupts (\`${DEFAULT_SIGNAL_ROOT}.interrupt.*.*\`); a service may also create the stream and its buckets when they are missing (a create never changes an existing stream). Updating, purging or deleting the stream, and deleting a group's consumer, take the admin credential.`,
    '',
    '| user | appends to the log | consumer group (pull, ack) | buckets | core subjects, other rights |',
    '|---|---|---|---|---|',
    ...rows,
    `| tap | no | — (consumers of its own only) | \`${Buckets.snapshots}\` (reads) | read-only over every tenant: no publish to the log or a bucket, no purge, no group's consumer |`,
    `| tap-<tenant> | no | — (consumers of its own, filtered to \`${subjectPrefix}.<tenant>.>\`) | — | direct gets of its tenant's subjects only; no stream info (it would list other tenants' subjects) |`,
    '| admin | any kind | any | all | everything (the launcher, operators, `nats stream edit`) |',
    '',
    `The exact subjects, as the embedded server and the chart configure them (\`-p{0..${PARTITIONS - 1}}\` stands for each of a partitioned group's ${PARTITIONS} partition consumers, \`<group>-p0\` to \`<group>-p${PARTITIONS - 1}\`):`,
    '',
    ...SERVICES.map((service) => raw(service, service)),
    raw('tap', 'tap'),
    raw({ tenantTap: '<tenant>' }, 'tap-&lt;tenant&gt;'),
  ].join('\n');
}

/** The same subject for each partition consumer, written once as `<group>-p{0..N}` (what the docs show; the servers get every one). */
function collapsePartitions<T extends object>(permissions: T): T {
  const partition = /-p(\d+)(?=\.|$)/;
  const collapse = (subjects: readonly string[]): string[] => {
    const seen = new Set<string>();
    return subjects.flatMap((subject) => {
      const template = subject.replace(partition, `-p{0..${PARTITIONS - 1}}`);
      if (seen.has(template)) return [];
      seen.add(template);
      return [template];
    });
  };
  return JSON.parse(JSON.stringify(permissions), (_key, value: unknown) =>
    Array.isArray(value) && value.every((item) => typeof item === 'string') ? collapse(value) : value,
  ) as T;
}

const START = '<!-- permissions:start -->';
const END = '<!-- permissions:end -->';

/** The document with the current matrix between its markers (the markers must be there). */
export function replacePermissionsBlock(document: string): string {
  const start = document.indexOf(START);
  const end = document.indexOf(END);
  if (start < 0 || end < start) throw new Error(`the document has no ${START} … ${END} block`);
  return `${document.slice(0, start + START.length)}\n${permissionsMarkdown()}\n${document.slice(end)}`;
}

/** The variable the official NATS chart's container reads a user's password from (`<< $VAR >>` in its config). */
export function passwordVariable(user: string): string {
  return `FLOTILLA_NATS_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD`;
}

/**
 * Values for the official `nats` Helm chart (JetStream, a 3-node cluster, and the permission
 * matrix as its authorization block, each password from the Secret the Flotilla chart makes):
 * helm/flotilla/files/nats-values.json, kept current by `npm run generate:nats` (tested).
 */
export function chartNatsValues(secretName = 'flotilla-nats-users'): Record<string, unknown> {
  const users = [...SERVICES, 'admin', 'tap'] as const;
  return {
    config: {
      jetstream: { enabled: true },
      cluster: { enabled: true, replicas: 3 },
      merge: {
        authorization: {
          users: users.map((user) => ({
            user,
            password: `<< $${passwordVariable(user)} >>`,
            permissions: permissionsFor(user),
          })),
        },
      },
    },
    container: {
      env: Object.fromEntries(
        users.map((user) => [passwordVariable(user), { valueFrom: { secretKeyRef: { name: secretName, key: user } } }]),
      ),
    },
  };
}
