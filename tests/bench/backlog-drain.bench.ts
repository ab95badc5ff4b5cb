import { draftEvent } from '@flotilla/events';
import { EMPTY_TAIL, type ConversationRef, type EventLog, type Tail } from '@flotilla/log';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { AckBatch, ensureDurableConsumer, ServiceMetrics, startCommitConsumer, type Delivery } from '@flotilla/runtime';
import { waitReady } from '@flotilla/supervisor';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { startTestSystem, type RunningTestSystem } from '../support/system.js';
import { condensedConversationCommits } from './condensed-conversation.js';
import { ratio, table } from './stats.js';

/** The groups on the events stream (the condenser is woken through a queue of its own). */
const GROUPS = ['step-worker', 'tool-runner', 'projector'] as const;

/**
 * A restarted service working through the commits it missed: a condensed conversation of
 * `events` events is written while the services that consume the log are stopped, then each is
 * started alone and timed until its group has nothing pending or unacknowledged, then all three
 * together on a second backlog as large (the hostile-load test's case). Baseline: a bare nats.js
 * consumer draining the same backlog on the same server, acking each commit; and the runtime's
 * commit consumer as the services configure it, with a handler that only acks.
 *
 * Then, on a server of its own, the same bare drain as a user with response permissions
 * (`allow_responses`) and as one without: a server that records every reply subject delivered to
 * such a user and walks them at each delivery (2.9 did, past 4,096) drains slower; no Flotilla
 * user has them (requestAnswer in libs/bus), and this row shows what they would cost.
 */
export async function benchBacklogDrain(events = 30_000): Promise<string> {
  const drain = await serviceDrain(events);
  const cause = await responsePermissionsDrain(drain.commits);
  return `${drain.report}\n\n${cause}`;
}

async function serviceDrain(events: number): Promise<{ report: string; commits: number }> {
  await using system = await startTestSystem();
  const consuming = system.processes.filter((child) => GROUPS.some((group) => child.name.startsWith(`${group}-`)));
  await Promise.all(consuming.map((child) => child.stop()));
  const first = { tenant: 'bench', conversation: 'backlog' };
  const commits = await writeBacklog(system.log, first, events);

  const jsm = system.log.jsm;
  const raw = await rawDrain(system.nc, jsm, system.log.streamName, commits);
  const rows = [['drain of the backlog', 'time', 'commits/s', 'ratio', 'of it, start-up']];
  rows.push(['bare nats.js consumer (baseline)', seconds(raw), rate(commits, raw), '1.00x', '']);
  for (const batched of [false, true]) {
    const ms = await runtimeConsumerDrain(system, commits, batched);
    rows.push([
      `startCommitConsumer, 32 at once, ${batched ? 'BatchedPull' : 'consume()'}, a handler that acks`,
      seconds(ms),
      rate(commits, ms),
      ratio(ms, raw),
      '',
    ]);
  }
  for (const child of consuming) {
    const group = child.name.replace(/-\d+$/, '');
    const [drained] = await restartAndDrain(system, [child]);
    const { ms, readyMs } = drained!;
    rows.push([`${group} alone`, seconds(ms), rate(commits, ms), ratio(ms, raw), seconds(readyMs)]);
    await child.stop();
  }
  await writeBacklog(system.log, { tenant: 'bench', conversation: 'backlog-2' }, events);
  const together = await restartAndDrain(system, consuming);
  consuming.forEach((child, index) => {
    const { ms, readyMs } = together[index]!;
    rows.push([
      `${child.name.replace(/-\d+$/, '')}, all three at once`,
      seconds(ms),
      rate(commits, ms),
      ratio(ms, raw),
      seconds(readyMs),
    ]);
  });
  return {
    report: `a backlog of ${commits.toLocaleString('en')} commits (${events.toLocaleString('en')} events, one conversation) per group\n${table(rows)}`,
    commits,
  };
}

/** The conversation as the runtime writes it (condensed), ended by a finish: nothing is owed at its tail. */
async function writeBacklog(log: EventLog, ref: ConversationRef, events: number): Promise<number> {
  let tail: Tail = EMPTY_TAIL;
  let commits = 0;
  const append = async (drafts: Parameters<EventLog['append']>[1]): Promise<void> => {
    const commit = await log.append(ref, drafts, { expected: tail });
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    commits += 1;
  };
  for (const drafts of condensedConversationCommits(ref, events)) await append(drafts);
  await append([
    draftEvent({ ...ref, source: 'agent' }, 'message', {
      role: 'assistant',
      content: [{ type: 'text', text: 'Done.' }],
    }),
    draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'finished', reason: 'the agent finished' }),
  ]);
  return commits;
}

/**
 * Starts the services and resolves, per service, the ms from its start until its group has nothing
 * pending or unacknowledged, and until it answered ready (it consumes from just before that).
 */
export async function restartAndDrain(
  system: RunningTestSystem,
  children: RunningTestSystem['processes'],
): Promise<{ ms: number; readyMs: number }[]> {
  const started = performance.now();
  for (const child of children) child.start();
  const ready = await Promise.all(
    children.map((child) =>
      waitReady(system.healthUrls.get(child.name)!, 60_000).then(() => performance.now() - started),
    ),
  );
  const groups = children.map((child) => child.name.replace(/-\d+$/, ''));
  const done = new Map<string, number>();
  while (done.size < groups.length) {
    if (performance.now() - started > 600_000)
      throw new Error(`still draining after 10 minutes: ${groups.filter((group) => !done.has(group)).join(', ')}`);
    for await (const consumer of system.log.jsm.consumers.list(system.log.streamName)) {
      const name = consumer.config.durable_name ?? '';
      if (groups.includes(name) && !done.has(name) && consumer.num_pending + consumer.num_ack_pending === 0)
        done.set(name, performance.now() - started);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return groups.map((group, index) => ({ ms: done.get(group)!, readyMs: ready[index]! }));
}

/** A durable consumer of the whole stream read with nats.js' consume() and each message acked: ms until `count` are acked. */
export async function rawDrain(
  nc: NatsConnection,
  jsm: JetStreamManager,
  stream: string,
  count: number,
  name = `raw-${Date.now()}`,
): Promise<number> {
  await jsm.consumers.add(stream, { durable_name: name, ack_policy: AckPolicy.Explicit, max_ack_pending: 256 });
  const consumer = await jetstream(nc).consumers.get(stream, name);
  const started = performance.now();
  const messages = await consumer.consume({ max_messages: 256 });
  let acked = 0;
  for await (const message of messages) {
    message.ack();
    if (++acked >= count) break;
  }
  await messages.close();
  await nc.flush();
  const ms = performance.now() - started;
  await jsm.consumers.delete(stream, name);
  return ms;
}

/** The runtime's commit consumer with a handler that only acks (after `work`, nothing by default), as the services configure it (32 at once; standing or batched pull). */
export async function runtimeConsumerDrain(
  system: RunningTestSystem,
  count: number,
  batched: boolean,
  work: (delivery: Delivery) => void = () => undefined,
): Promise<number> {
  const { log, nc } = system;
  const name = `runtime-${batched ? 'batched' : 'consume'}-${Date.now()}`;
  await ensureDurableConsumer(log.jsm, {
    stream: log.streamName,
    name,
    filterSubjects: [`${log.subjectPrefix}.>`],
    ackWaitMs: 30_000,
    maxAckPending: 256,
  });
  let handled = 0;
  let done!: () => void;
  const drained = new Promise<void>((resolve) => (done = resolve));
  const started = performance.now();
  const consumer = await startCommitConsumer({
    js: jetstream(nc),
    stream: log.streamName,
    consumer: name,
    subjectPrefix: log.subjectPrefix,
    concurrency: 32,
    ackWaitMs: 30_000,
    logger: pino({ level: 'silent' }),
    metrics: new ServiceMetrics(name),
    acks: new AckBatch(20),
    ...(batched ? { batched: { nc, intervalMs: 10 } } : {}),
    handler: async (delivery) => {
      work(delivery);
      if (++handled === count) done();
      return { ack: true, outcome: 'ok' };
    },
  });
  await drained;
  await consumer.stop();
  await nc.flush();
  const ms = performance.now() - started;
  await log.jsm.consumers.delete(log.streamName, name);
  return ms;
}

/** The bare drain as a user with response permissions and as one without, on a server of their own. */
async function responsePermissionsDrain(count: number): Promise<string> {
  const everything = { publish: { allow: ['>'] }, subscribe: { allow: ['>'] } };
  const users = [
    { user: 'plain', password: 'plain-password', permissions: everything },
    { user: 'responder', password: 'responder-password', permissions: { ...everything, allow_responses: true } },
  ];
  await using server = await NatsServerProcess.start({
    config: `authorization {\n  users: ${JSON.stringify(users)}\n}\n`,
  });
  const as = (user: (typeof users)[number]) => connect({ servers: server.url, user: user.user, pass: user.password });
  const writer = await as(users[0]!);
  const rows = [['the same bare drain, its user', 'time', 'commits/s', 'ratio']];
  try {
    const jsm = await jetstreamManager(writer);
    await jsm.streams.add({ name: 'BACKLOG', subjects: ['backlog.*'] });
    const js = jetstream(writer);
    const body = new Uint8Array(800);
    for (let sent = 0; sent < count; sent += 500)
      await Promise.all(Array.from({ length: Math.min(500, count - sent) }, () => js.publish('backlog.one', body)));
    let baseline = 0;
    for (const user of users) {
      const nc = await as(user);
      try {
        const ms = await rawDrain(nc, await jetstreamManager(nc), 'BACKLOG', count);
        baseline ||= ms;
        rows.push([
          user.permissions === everything ? 'no response permissions (baseline)' : 'allow_responses',
          seconds(ms),
          rate(count, ms),
          ratio(ms, baseline),
        ]);
      } finally {
        await nc.close();
      }
    }
  } finally {
    await writer.close();
  }
  return `${count.toLocaleString('en')} messages of 800 B on one subject, on a server of their own\n${table(rows)}`;
}

const seconds = (ms: number): string => `${(ms / 1_000).toFixed(2)} s`;
const rate = (count: number, ms: number): string => `${Math.round(count / (ms / 1_000)).toLocaleString('en')}`;
