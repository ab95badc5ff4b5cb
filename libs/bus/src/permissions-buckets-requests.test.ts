import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { describe, expect, it } from 'vitest';
import { inboxPrefix } from './connection-options.js';
import { requestAnswer } from './answered-request.js';
import { bucketStream, Buckets, PURGE_SUBJECT, RunnerSubjects } from './layout.js';
import { permissionsFor, SERVICES } from './permissions.js';
import { as, attempt, startMatrixServer, violations } from './test-support/matrix-server.js';

// The permission matrix against a real nats-server configured from it: what each credential's
// work needs is allowed, and the operations it must not do are refused by the server itself.
// Here the buckets (secrets, watches' flow control, API keys, ownership, view checkpoints,
// images), the requests between services and who may subscribe to conversations' subjects. (The
// events log: permissions-log.test.ts.)

startMatrixServer();

describe('the server configured from the matrix', () => {
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
});
