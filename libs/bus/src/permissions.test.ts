import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess } from '@flotilla/nats-embedded';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBusSettings } from './bus-settings.js';
import { connectionOptions, inboxPrefix } from './connection-options.js';
import { requestAnswer } from './answered-request.js';
import {
  bucketStream,
  Buckets,
  COMMIT_KINDS,
  commitKindOf,
  CONDENSER_WAKEUPS,
  DEFAULT_STREAM_NAME,
  PURGE_SUBJECT,
  RunnerSubjects,
  WEBHOOK_DELIVERIES,
} from './layout.js';
import { appendsToLog, CONSUMER_GROUPS, GROUP_QUEUES, permissionsFor, SERVICES, type Identity } from './permissions.js';
import { ensureWorkQueue } from './work-queue.js';
import { authorizationConfig, ensureUsers, userEnvironment, type GeneratedUser } from './server-authorization.js';

// The permission matrix against a real nats-server configured from it: what each credential's
// work needs is allowed, and the operations it must not do are refused by the server itself.

let dir: string;
let server: NatsServerProcess;
let users: Map<string, GeneratedUser>;
const violations: string[] = [];
const open: NatsConnection[] = [];

async function as(identity: Identity): Promise<NatsConnection> {
  const user = users.get(typeof identity === 'string' ? identity : `tap-${identity.tenantTap}`)!;
  const nc = await connect({
    ...connectionOptions(loadBusSettings({ FLOTILLA_NATS_URL: server.url, ...userEnvironment(user) }), {
      name: user.user,
      identity: user.user,
    }),
    maxReconnectAttempts: 0,
  });
  open.push(nc);
  return nc;
}

/** Resolves to 'refused' when the server denies it (the error names the permission), else 'allowed'. */
async function attempt(operation: () => Promise<unknown>): Promise<'allowed' | 'refused'> {
  try {
    await operation();
    return 'allowed';
  } catch (error) {
    const text = `${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`;
    if (/permission/i.test(text)) return 'refused';
    throw error;
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-permissions-'));
  users = new Map(
    (await ensureUsers(join(dir, 'users'), [...SERVICES, 'admin', 'tap', { tenantTap: 'acme' }])).map((user) => [
      user.user,
      user,
    ]),
  );
  server = await NatsServerProcess.start({
    storeDir: join(dir, 'store'),
    config: authorizationConfig([...users.values()]),
    onLog: (line) => (line.includes('Violation') ? violations.push(line) : undefined),
  });
  // the admin sets up what the services would create at start
  const admin = await as('admin');
  const jsm = await jetstreamManager(admin);
  await jsm.streams.add({ name: DEFAULT_STREAM_NAME, subjects: ['flotilla.ev.*.*.*'], allow_direct: true });
  const kvm = new Kvm(admin);
  for (const name of Object.values(Buckets)) await kvm.create(name, { history: 1 });
  const js = jetstream(admin);
  await js.publish('flotilla.ev.acme.c1.user', 'acme commit');
  await js.publish('flotilla.ev.globex.c1.user', 'globex commit');
  await (await kvm.open(Buckets.secrets)).put('acme.defaults.TOKEN', 'ciphertext');
}, 30_000);

afterAll(async () => {
  await Promise.all(open.map((nc) => nc.close().catch(() => undefined)));
  await server?.[Symbol.asyncDispose]();
  await rm(dir, { recursive: true, force: true });
});

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

  it('lets the gateway write secrets but never read them back', async () => {
    const nc = await as('gateway');
    const kv = await new Kvm(nc).open(Buckets.secrets);
    expect(await attempt(() => kv.put('acme.defaults.NEW', 'ciphertext'))).toBe('allowed');
    expect(await attempt(() => kv.get('acme.defaults.TOKEN'))).toBe('refused');
    expect(
      await attempt(() =>
        jetstreamManager(nc).then((jsm) =>
          jsm.streams.getMessage(bucketStream(Buckets.secrets), {
            last_by_subj: `$KV.${Buckets.secrets}.acme.defaults.TOKEN`,
          }),
        ),
      ),
    ).toBe('refused');
    expect(
      await attempt(async () => {
        for await (const key of await kv.keys()) return key;
        return undefined;
      }),
    ).toBe('refused');
    // its own buckets it reads and writes
    const names = await new Kvm(nc).open(Buckets.secretNames);
    expect(await attempt(() => names.put('acme.defaults.NEW', '{}').then(() => names.get('acme.defaults.NEW')))).toBe(
      'allowed',
    );
  });

  it("lets a bucket's readers answer its watches' flow control, and no one else", async () => {
    const before = violations.length;
    const fc = (bucket: string) => `$JS.FC.${bucketStream(bucket)}.watch.1.1`;
    for (const [service, bucket] of [
      ['gateway', Buckets.snapshots],
      ['step-worker', Buckets.secrets],
      ['condenser', Buckets.secrets],
      ['tool-runner', Buckets.secrets],
    ] as const) {
      const nc = await as(service);
      nc.publish(fc(bucket), '');
      await nc.flush();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(violations.slice(before)).toEqual([]);
    const projector = await as('projector');
    projector.publish(fc(Buckets.secrets), '');
    await projector.flush();
    await expect
      .poll(() => violations.slice(before).some((line) => line.includes('$JS.FC.KV_')), { timeout: 5_000 })
      .toBe(true);
  });

  it('lets the tool runner (for sandboxes) and the model callers (for model keys) read secrets, no one else', async () => {
    for (const service of ['tool-runner', 'step-worker', 'condenser'] as const) {
      const reader = await new Kvm(await as(service)).open(Buckets.secrets);
      expect((await reader.get('acme.defaults.TOKEN'))?.string(), service).toBe('ciphertext');
    }
    for (const service of ['projector'] as const) {
      const kv = await new Kvm(await as(service)).open(Buckets.secrets);
      expect(await attempt(() => kv.get('acme.defaults.TOKEN')), service).toBe('refused');
    }
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

  it('lets the tool runner and the projector answer the gateway’s requests in its answers branch and nowhere else in its inbox; no user has response permissions', async () => {
    const gateway = await as('gateway');
    for (const [service, subject] of [
      ['tool-runner', RunnerSubjects.deleteAny],
      ['tool-runner', RunnerSubjects.workspaceAny],
      ['tool-runner', RunnerSubjects.workspace('runner-1')],
      ['projector', PURGE_SUBJECT],
    ] as const) {
      const nc = await as(service);
      nc.subscribe(subject, { max: 1, callback: (_error, message) => void message.respond('done') });
      await nc.flush();
      expect((await requestAnswer(gateway, subject, undefined, { timeout: 5_000 })).string(), service).toBe('done');
      // elsewhere in the gateway's inbox (its JetStream API replies arrive there) nothing gets through
      const forged: string[] = [];
      gateway.subscribe(`${inboxPrefix('gateway')}.forged`, {
        callback: (_error, message) => void forged.push(message.string()),
      });
      await gateway.flush();
      nc.publish(`${inboxPrefix('gateway')}.forged`, 'forged');
      await nc.flush();
      await gateway.flush();
      expect(forged, service).toEqual([]);
    }
    // response permissions make every JetStream delivery walk the user's recent ones on nats-server 2.9 (requestAnswer)
    for (const identity of [...SERVICES, 'admin', 'tap', { tenantTap: 'acme' }] as const)
      expect(permissionsFor(identity)).not.toHaveProperty('allow_responses');
  });

  it('lets only the gateway ask the tool runners about a workspace (its files hold what the agent made)', async () => {
    for (const service of ['step-worker', 'condenser', 'projector', 'pg-sink', 'webhooks'] as const) {
      const nc = await as(service);
      expect(
        await attempt(() => requestAnswer(nc, RunnerSubjects.workspaceAny, undefined, { timeout: 2_000 })),
        service,
      ).toBe('refused');
      expect(
        await attempt(() => requestAnswer(nc, RunnerSubjects.workspace('runner-1'), undefined, { timeout: 2_000 })),
        service,
      ).toBe('refused');
    }
    // nor does anyone but a tool runner receive them
    const listener = await as('gateway');
    expect(
      await attempt(
        () =>
          new Promise((resolve, reject) => {
            listener.subscribe(RunnerSubjects.workspaceAny, {
              callback: (error) => (error ? reject(error) : resolve(undefined)),
            });
            listener.flush().then(() => setTimeout(resolve, 500), reject);
          }),
      ),
    ).toBe('refused');
  });

  it("lets the gateway receive every tenant's publishes on conversations' subjects (what wakes its live follows), and no other user", async () => {
    const gateway = await as('gateway');
    const received: string[] = [];
    for (const subject of ['flotilla.ev.acme.live.user', 'flotilla.ev.globex.live.user']) {
      gateway.subscribe(subject, {
        max: 1,
        callback: (error, message) => void received.push(error ? `refused: ${error.message}` : message.subject),
      });
    }
    await gateway.flush();
    const js = jetstream(await as('admin'));
    await js.publish('flotilla.ev.acme.live.user', 'acme commit');
    await js.publish('flotilla.ev.globex.live.user', 'globex commit');
    await expect
      .poll(() => [...received].sort())
      .toEqual(['flotilla.ev.acme.live.user', 'flotilla.ev.globex.live.user']);
    // subscribing is all it gains: nothing of another service's (their groups, their requests)
    expect(permissionsFor('gateway').subscribe.allow).not.toContain(RunnerSubjects.wake('*'));
    const others = [...SERVICES.filter((service) => service !== 'gateway'), 'tap', { tenantTap: 'acme' }] as const;
    const outcomes = await Promise.all(
      others.map(async (identity) => {
        const nc = await as(identity);
        return attempt(
          () =>
            new Promise((resolve, reject) => {
              nc.subscribe('flotilla.ev.acme.c1.user', {
                callback: (error) => (error ? reject(error) : resolve(undefined)),
              });
              nc.flush().then(() => setTimeout(resolve, 500), reject);
            }),
        );
      }),
    );
    expect(outcomes).toEqual(others.map(() => 'refused'));
  });

  it('refuses API-key and ownership writes to services that do not own them', async () => {
    const keys = await new Kvm(await as('tool-runner')).open(Buckets.apiKeys);
    expect(await attempt(() => keys.put('0123', '{"tenant":"evil"}'))).toBe('refused');
    const workspaces = await new Kvm(await as('gateway')).open(Buckets.workspaces);
    expect(await attempt(() => workspaces.put('acme.c1', 'runner-x'))).toBe('refused');
  });

  it('lets the projector write view checkpoints and the step worker only read them', async () => {
    const writer = await new Kvm(await as('projector')).open(Buckets.viewCheckpoints);
    expect(await attempt(() => writer.put('acme.c1', '{"v":1}'))).toBe('allowed');
    const reader = await new Kvm(await as('step-worker')).open(Buckets.viewCheckpoints);
    expect((await reader.get('acme.c1'))?.string()).toBe('{"v":1}');
    expect(await attempt(() => reader.put('acme.c1', 'forged'))).toBe('refused');
    for (const service of ['gateway', 'tool-runner', 'condenser'] as const) {
      const kv = await new Kvm(await as(service)).open(Buckets.viewCheckpoints);
      expect(await attempt(() => kv.get('acme.c1')), service).toBe('refused');
    }
  });

  it('lets the gateway store images without reading them back, the step worker read them, and nobody else either', async () => {
    const writer = await new Kvm(await as('gateway')).open(Buckets.images);
    expect(await attempt(() => writer.put('acme.0123.0', 'png bytes'))).toBe('allowed');
    expect(await attempt(() => writer.get('acme.0123.0'))).toBe('refused');
    const reader = await new Kvm(await as('step-worker')).open(Buckets.images);
    expect((await reader.get('acme.0123.0'))?.string()).toBe('png bytes');
    expect(await attempt(() => reader.put('acme.0123.0', 'forged'))).toBe('refused');
    for (const service of ['tool-runner', 'condenser', 'projector', 'pg-sink', 'webhooks'] as const) {
      const kv = await new Kvm(await as(service)).open(Buckets.images).catch(() => undefined);
      if (kv === undefined) continue; // cannot even open it
      expect(await attempt(() => kv.get('acme.0123.0')), service).toBe('refused');
      expect(await attempt(() => kv.put('acme.0123.0', 'forged')), service).toBe('refused');
    }
    const tap = await as('tap');
    expect(await attempt(() => new Kvm(tap).open(Buckets.images).then((kv) => kv.get('acme.0123.0')))).toBe('refused');
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
