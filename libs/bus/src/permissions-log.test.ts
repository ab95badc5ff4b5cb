import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { requestAnswer } from './answered-request.js';
import {
  Buckets,
  bucketStream,
  COMMIT_KINDS,
  commitKindOf,
  CONDENSER_WAKEUPS,
  DEFAULT_STREAM_NAME,
  PURGE_SUBJECT,
  RunnerSubjects,
  WEBHOOK_DELIVERIES,
} from './layout.js';
import { appendsToLog, CONSUMER_GROUPS, GROUP_QUEUES, SERVICES } from './permissions.js';
import { ensureWorkQueue } from './work-queue.js';
import { as, attempt, server, startMatrixServer, violations } from './test-support/matrix-server.js';

// The permission matrix against a real nats-server configured from it: what each credential's
// work needs is allowed, and the operations it must not do are refused by the server itself.
// Here the events log: connecting, the stream and its groups, the work queues, appends, purges,
// taps, and the server's log of the refusals. (Buckets, requests and subscriptions:
// permissions-buckets-requests.test.ts.)

startMatrixServer();

describe('the server configured from the matrix', () => {
  it('refuses anonymous clients and wrong passwords', async () => {
    await expect(connect({ servers: server.url, maxReconnectAttempts: 0 })).rejects.toThrow(/authorization/i);
    await expect(
      connect({ servers: server.url, user: 'gateway', pass: 'not-the-password', maxReconnectAttempts: 0 }),
    ).rejects.toThrow(/authorization/i);
  });

  it('lets each service open the events stream and its own group consumer', async () => {
    for (const service of CONSUMER_GROUPS.filter((group) => GROUP_QUEUES[group] === undefined)) {
      const jsm = await jetstreamManager(await as(service));
      expect((await jsm.streams.info(DEFAULT_STREAM_NAME)).config.name).toBe(DEFAULT_STREAM_NAME);
      await jsm.consumers.add(DEFAULT_STREAM_NAME, {
        durable_name: service,
        ack_policy: AckPolicy.Explicit,
        filter_subject: 'flotilla.ev.>',
      });
    }
  });

  it("lets step workers wake the condenser through its queue, which the condenser alone pulls; nobody takes the condenser's old group on the events stream", async () => {
    const wakeSubject = `${CONDENSER_WAKEUPS.subjectPrefix}.acme.c1`;
    const stepWorker = await as('step-worker');
    const stepWorkerJsm = await jetstreamManager(stepWorker);
    // either side creates the queue when it is missing
    await ensureWorkQueue(stepWorkerJsm, {
      stream: CONDENSER_WAKEUPS.stream,
      description: 'wake-ups',
      subjects: [`${CONDENSER_WAKEUPS.subjectPrefix}.*.*`],
      replicas: 1,
      duplicateWindowMs: 60_000,
    });
    await jetstream(stepWorker).publish(wakeSubject, '{"v":1,"reason":"condense","at":1}');
    const condenser = await as('condenser');
    const condenserJsm = await jetstreamManager(condenser);
    await condenserJsm.consumers.add(CONDENSER_WAKEUPS.stream, {
      durable_name: CONDENSER_WAKEUPS.group,
      ack_policy: AckPolicy.Explicit,
      filter_subject: `${CONDENSER_WAKEUPS.subjectPrefix}.>`,
    });
    const wakeup = await (
      await jetstream(condenser).consumers.get(CONDENSER_WAKEUPS.stream, CONDENSER_WAKEUPS.group)
    ).next({ expires: 2_000 });
    expect(wakeup?.subject).toBe(wakeSubject);
    await wakeup?.ackAck();
    // the step worker may see whether a condenser group is there, not pull from it
    expect((await stepWorkerJsm.consumers.info(CONDENSER_WAKEUPS.stream, CONDENSER_WAKEUPS.group)).name).toBe(
      CONDENSER_WAKEUPS.group,
    );
    expect(
      await attempt(() =>
        stepWorkerJsm.consumers.add(CONDENSER_WAKEUPS.stream, { durable_name: 'peek', ack_policy: AckPolicy.None }),
      ),
    ).toBe('refused');
    for (const service of ['gateway', 'tool-runner', 'projector', 'delegator'] as const) {
      const nc = await as(service);
      expect(await attempt(() => jetstream(nc).publish(wakeSubject, '{}')), service).toBe('refused');
    }
    expect(
      await attempt(() =>
        condenserJsm.consumers.add(DEFAULT_STREAM_NAME, {
          durable_name: 'condenser',
          ack_policy: AckPolicy.Explicit,
          filter_subject: 'flotilla.ev.>',
        }),
      ),
    ).toBe('refused');
  });

  it('refuses a step worker that purges or deletes the stream, or pulls another group’s commits', async () => {
    const nc = await as('step-worker');
    const jsm = await jetstreamManager(nc);
    expect(await attempt(() => jsm.streams.purge(DEFAULT_STREAM_NAME))).toBe('refused');
    expect(await attempt(() => jsm.streams.delete(DEFAULT_STREAM_NAME))).toBe('refused');
    expect(await attempt(() => jsm.streams.update(DEFAULT_STREAM_NAME, { max_msgs: 1 }))).toBe('refused');
    expect(await attempt(() => jsm.consumers.delete(DEFAULT_STREAM_NAME, 'tool-runner'))).toBe('refused');
    expect(
      await attempt(() =>
        nc.request(
          `$JS.API.CONSUMER.MSG.NEXT.${DEFAULT_STREAM_NAME}.tool-runner`,
          JSON.stringify({ batch: 1, expires: 1_000_000_000 }),
          { timeout: 2_000 },
        ),
      ),
    ).toBe('refused');
    expect(await attempt(() => jsm.streams.delete(bucketStream(Buckets.apiKeys)))).toBe('refused');
    // its own work is allowed: appending
    expect(await attempt(() => jetstream(nc).publish('flotilla.ev.acme.c2.step', 'a step'))).toBe('allowed');
  });

  it('lets each service append only its own kind of commit: a forged commit of another kind is refused by the server', async () => {
    for (const service of SERVICES) {
      const nc = await as(service);
      const js = jetstream(nc);
      for (const kind of COMMIT_KINDS) {
        const outcome = await attempt(() =>
          js.publish(`flotilla.ev.acme.kinds.${kind}`, `a ${kind} commit from the ${service}`),
        );
        expect(outcome, `${service} appending a ${kind} commit`).toBe(
          appendsToLog(service) && commitKindOf(service) === kind ? 'allowed' : 'refused',
        );
      }
      // and never on the legacy layout's subjects, which no current writer appends to
      expect(await attempt(() => js.publish('flotilla.ev.acme.kinds', 'a legacy commit')), service).toBe('refused');
    }
    // what each writes, as WRITER_KINDS says: the gateway users' and control commits, a step worker steps, a tool runner its results
    expect(
      ['gateway', 'step-worker', 'tool-runner', 'condenser', 'delegator'].map((service) => commitKindOf(service)),
    ).toEqual(['user', 'step', 'tool', 'condense', 'delegate']);
  });

  it('lets the PostgreSQL sink read the log and pull its group, and nothing else: no append, no stream create, no other group', async () => {
    const nc = await as('pg-sink');
    const jsm = await jetstreamManager(nc);
    expect(
      (await jsm.direct.getMessage(DEFAULT_STREAM_NAME, { last_by_subj: 'flotilla.ev.globex.c1.user' }))?.string(),
    ).toBe('globex commit');
    expect(await attempt(() => jetstream(nc).publish('flotilla.ev.acme.c3.user', 'forged'))).toBe('refused');
    expect(await attempt(() => jsm.streams.add({ name: 'FLOTILLA_OTHER', subjects: ['other.>'] }))).toBe('refused');
    expect(await attempt(() => jsm.streams.purge(DEFAULT_STREAM_NAME))).toBe('refused');
    expect(
      await attempt(() =>
        nc.request(
          `$JS.API.CONSUMER.MSG.NEXT.${DEFAULT_STREAM_NAME}.projector`,
          JSON.stringify({ batch: 1, expires: 1_000_000_000 }),
          { timeout: 2_000 },
        ),
      ),
    ).toBe('refused');
    expect(await attempt(() => new Kvm(nc).open(Buckets.snapshots).then((kv) => kv.get('acme.c1')))).toBe('refused');
  });

  it('lets the webhooks service read the log, pull its group, keep its own delivery queue and write dead letters; nothing else', async () => {
    const nc = await as('webhooks');
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    expect(
      (await jsm.direct.getMessage(DEFAULT_STREAM_NAME, { last_by_subj: 'flotilla.ev.acme.c1.user' }))?.string(),
    ).toBe('acme commit');
    expect(await attempt(() => js.publish('flotilla.ev.acme.c3.user', 'forged'))).toBe('refused');
    expect(await attempt(() => jsm.streams.add({ name: 'FLOTILLA_OTHER', subjects: ['other.>'] }))).toBe('refused');
    // its queue: created, filled, pulled and acked by it
    await jsm.streams.add({
      name: WEBHOOK_DELIVERIES.stream,
      subjects: [`${WEBHOOK_DELIVERIES.subjectPrefix}.*.*`],
      retention: RetentionPolicy.Workqueue,
    });
    await js.publish(`${WEBHOOK_DELIVERIES.subjectPrefix}.acme.wh1`, 'a delivery');
    await jsm.consumers.add(WEBHOOK_DELIVERIES.stream, { durable_name: 'webhooks', ack_policy: AckPolicy.Explicit });
    const delivery = await (await js.consumers.get(WEBHOOK_DELIVERIES.stream, 'webhooks')).next({ expires: 2_000 });
    expect(delivery?.string()).toBe('a delivery');
    delivery?.ack();
    // registrations it reads but never writes; dead letters it writes; never a secret's ciphertext
    const registrations = await new Kvm(nc).open(Buckets.webhooks);
    expect(await attempt(() => registrations.get('acme.wh1'))).toBe('allowed');
    expect(await attempt(() => registrations.put('acme.wh1', 'forged'))).toBe('refused');
    expect(
      await attempt(() => new Kvm(nc).open(Buckets.webhookDeadLetters).then((kv) => kv.put('acme.wh1.evt_1', '{}'))),
    ).toBe('allowed');
    expect(await attempt(() => new Kvm(nc).open(Buckets.secrets).then((kv) => kv.get('acme.defaults.TOKEN')))).toBe(
      'refused',
    );
    expect(
      await attempt(() =>
        nc.request(
          `$JS.API.CONSUMER.MSG.NEXT.${DEFAULT_STREAM_NAME}.step-worker`,
          JSON.stringify({ batch: 1, expires: 1_000_000_000 }),
          { timeout: 2_000 },
        ),
      ),
    ).toBe('refused');
    // nobody else manages the queue or takes from it; the gateway puts its retention's announcements in (api.md, "Retention")
    const gateway = await as('gateway');
    expect(
      await attempt(() => jetstream(gateway).publish(`${WEBHOOK_DELIVERIES.subjectPrefix}.acme.wh1`, 'announced')),
    ).toBe('allowed');
    expect(
      await attempt(() =>
        gateway.request(
          `$JS.API.CONSUMER.MSG.NEXT.${WEBHOOK_DELIVERIES.stream}.webhooks`,
          JSON.stringify({ batch: 1, expires: 1_000_000_000 }),
          { timeout: 2_000 },
        ),
      ),
    ).toBe('refused');
    expect(
      await attempt(() => jetstreamManager(gateway).then((manager) => manager.streams.info(WEBHOOK_DELIVERIES.stream))),
    ).toBe('refused');
    expect(await attempt(() => new Kvm(gateway).open(Buckets.webhooks).then((kv) => kv.put('acme.wh2', '{}')))).toBe(
      'allowed',
    );
  });

  it('lets the delegator append to the log, pull its group and publish interrupts, and touch no bucket', async () => {
    const nc = await as('delegator');
    const jsm = await jetstreamManager(nc);
    expect(await attempt(() => jetstream(nc).publish('flotilla.ev.acme.sub-1.delegate', 'a child'))).toBe('allowed');
    expect(
      await attempt(() =>
        nc
          .flush()
          .then(() => nc.publish('flotilla.signal.interrupt.acme.sub-1', '{}'))
          .then(() => nc.flush()),
      ),
    ).toBe('allowed');
    for (const bucket of [Buckets.snapshots, Buckets.secrets, Buckets.workspaces, Buckets.runners]) {
      expect(await attempt(() => new Kvm(nc).open(bucket).then((kv) => kv.get('acme.c1'))), bucket).toBe('refused');
    }
    expect(await attempt(() => jsm.streams.purge(DEFAULT_STREAM_NAME, { filter: 'flotilla.ev.acme.c1.user' }))).toBe(
      'refused',
    );
    expect(
      await attempt(() =>
        nc.request(
          `$JS.API.CONSUMER.MSG.NEXT.${DEFAULT_STREAM_NAME}.step-worker`,
          JSON.stringify({ batch: 1, expires: 1_000_000_000 }),
          { timeout: 2_000 },
        ),
      ),
    ).toBe('refused');
    expect(await attempt(() => requestAnswer(nc, RunnerSubjects.deleteAny, undefined, { timeout: 2_000 }))).toBe(
      'refused',
    );
  });

  it('lets the projector purge (a conversation’s log, on the gateway’s request) but not append', async () => {
    const nc = await as('projector');
    expect(await attempt(() => jetstream(nc).publish('flotilla.ev.acme.c3.user', 'forged'))).toBe('refused');
    expect(
      await attempt(() =>
        jetstreamManager(nc).then((jsm) =>
          jsm.streams.purge(DEFAULT_STREAM_NAME, { filter: 'flotilla.ev.acme.nothing' }),
        ),
      ),
    ).toBe('allowed');
    // the gateway may ask for it, nobody else
    const gateway = await as('gateway');
    expect(await attempt(() => gateway.flush().then(() => gateway.publish(PURGE_SUBJECT, '')))).toBe('allowed');
  });

  it('lets a tap read every tenant but write nothing', async () => {
    const nc = await as('tap');
    const jsm = await jetstreamManager(nc);
    expect(
      (await jsm.direct.getMessage(DEFAULT_STREAM_NAME, { last_by_subj: 'flotilla.ev.globex.c1.user' }))?.string(),
    ).toBe('globex commit');
    expect(await attempt(() => jetstream(nc).publish('flotilla.ev.acme.c1.user', 'forged'))).toBe('refused');
    expect(await attempt(() => jsm.streams.purge(DEFAULT_STREAM_NAME))).toBe('refused');
    expect(await attempt(() => new Kvm(nc).open(Buckets.secrets).then((kv) => kv.get('acme.defaults.TOKEN')))).toBe(
      'refused',
    );
  });

  it('confines a tenant tap to its tenant’s subjects', async () => {
    const nc = await as({ tenantTap: 'acme' });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    // a consumer of its own on its tenant's subjects (not nats.js' ordered consumer: that reads the stream's info, which lists every subject)
    await jsm.consumers.add(DEFAULT_STREAM_NAME, {
      name: 'acme-audit',
      filter_subject: 'flotilla.ev.acme.>',
      ack_policy: AckPolicy.Explicit,
    });
    const first = await (await js.consumers.get(DEFAULT_STREAM_NAME, 'acme-audit')).next({ expires: 2_000 });
    expect(first?.subject).toBe('flotilla.ev.acme.c1.user');
    first?.ack();
    expect(
      await attempt(() =>
        jsm.consumers.add(DEFAULT_STREAM_NAME, {
          name: 'peek',
          filter_subject: 'flotilla.ev.globex.>',
          ack_policy: AckPolicy.None,
        }),
      ),
    ).toBe('refused');
    expect(
      await attempt(() => jsm.consumers.add(DEFAULT_STREAM_NAME, { name: 'all', ack_policy: AckPolicy.None })),
    ).toBe('refused');
    expect(
      await attempt(() => jsm.direct.getMessage(DEFAULT_STREAM_NAME, { last_by_subj: 'flotilla.ev.globex.c1.user' })),
    ).toBe('refused');
    expect(await attempt(() => jsm.streams.info(DEFAULT_STREAM_NAME, { subjects_filter: '>' }))).toBe('refused');
    expect(await attempt(() => js.publish('flotilla.ev.acme.c1.user', 'forged'))).toBe('refused');
  });

  it('reports every refusal in the server log (what the system tests watch for)', () => {
    expect(violations.length).toBeGreaterThan(0);
    // nats-server names the connection's account and user: `"$G/user:step-worker" - Publish Violation - Subject "…"`
    expect(violations.some((line) => line.includes('/user:step-worker" - '))).toBe(true);
  });
});
