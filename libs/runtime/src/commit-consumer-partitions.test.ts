// Partitioned consumer groups: each conversation's commits go to the live instance holding its
// partition, and to an idle sibling when that one is full.
import { draftEvent } from '@flotilla/events';
import { memberSubject, PARTITIONS, partitionPriorities, partitionPriority } from '@flotilla/bus';
import { EventLog } from '@flotilla/log';
import { uniqueName } from '@flotilla/testing';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PARTITION_PULL_EXPIRES_MS, startCommitConsumer, type CommitConsumer } from './commit-consumer.js';
import { ensureGroupConsumers } from './durable-consumer.js';
import { GroupMembers } from './group-members.js';
import { ServiceMetrics } from './metrics.js';
import { nc, server, serverSawClose, startNatsForFile } from './test-support/commit-consumer-fixture.js';

startNatsForFile({ monitor: true });

describe('partitioned groups', () => {
  /** Instance ids whose priorities never tie on a partition, so each partition has one holder among them. */
  const distinctIds = (count: number): string[] => {
    const ids: string[] = [];
    for (let candidate = 0; ids.length < count; candidate += 1) {
      const id = `worker-${candidate}`;
      const clash = Array.from({ length: PARTITIONS }, (_, partition) => partition).some((partition) =>
        ids.some((other) => partitionPriority(other, partition) === partitionPriority(id, partition)),
      );
      if (!clash) ids.push(id);
    }
    return ids;
  };

  it("delivers each conversation's commits to the live instance holding its partition, and moves them at once when it dies or a better one starts", async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const [a, b, c] = distinctIds(3) as [string, string, string];
    const handled = new Map<string, Set<string>>();
    const partitionOf = new Map<string, number>();
    let count = 0;
    const start = async (instance: string) => {
      const connection = await connect({ servers: server.url });
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
      const consumer = await startCommitConsumer({
        js: jetstream(connection),
        stream: name,
        consumer: 'step-worker',
        partitions,
        subjectPrefix: prefix,
        ackWaitMs: 30_000,
        logger: pino({ level: 'silent' }),
        metrics: new ServiceMetrics('test'),
        concurrency: 64,
        handler: async (delivery) => {
          const conversation = delivery.ref!.conversation;
          partitionOf.set(conversation, Number(delivery.subject.split('.').at(-1)));
          handled.set(conversation, (handled.get(conversation) ?? new Set()).add(instance));
          count += 1;
          return { ack: true, outcome: 'ok' };
        },
      });
      return { connection, consumer };
    };
    const conversations = Array.from({ length: 64 }, (_, index) => `c${index}`);
    const tails = new Map<string, { streamSeq: number; lastSeq: number }>(
      conversations.map((conversation) => [conversation, { streamSeq: 0, lastSeq: 0 }]),
    );
    const round = async (): Promise<void> => {
      const before = count;
      handled.clear();
      for (const conversation of conversations) {
        const ref = { tenant: 'acme', conversation };
        const appended = await gateway.append(
          ref,
          [
            draftEvent({ ...ref, source: 'user' }, 'message', {
              role: 'user',
              content: [{ type: 'text', text: 'hi' }],
            }),
          ],
          { expected: tails.get(conversation)! },
        );
        tails.set(conversation, { streamSeq: appended.streamSeq, lastSeq: appended.lastSeq });
      }
      await expect.poll(() => count - before, { timeout: 10_000 }).toBe(conversations.length);
    };
    /** Who handled each conversation this round, and who holds its partition among `live` (the best priority). */
    const holders = (live: readonly string[]) =>
      conversations.map((conversation) => {
        const partition = partitionOf.get(conversation)!;
        const best = [...live].sort((x, y) => partitionPriority(x, partition) - partitionPriority(y, partition))[0];
        return { conversation, handledBy: [...handled.get(conversation)!], holder: best };
      });

    /** Until every partition's consumer holds a waiting pull of each of `instances` live instances. */
    const pullsWaiting = async (instances: number): Promise<void> => {
      await expect
        .poll(
          async () =>
            Math.min(
              ...(await Promise.all(
                Array.from(
                  { length: PARTITIONS },
                  async (_, partition) =>
                    (await gateway.jsm.consumers.info(name, `step-worker-p${partition}`)).num_waiting,
                ),
              )),
            ),
          { timeout: 10_000 },
        )
        .toBeGreaterThanOrEqual(instances);
    };
    const first = await start(a);
    const second = await start(b);
    try {
      await pullsWaiting(2);
      await round();
      for (const entry of holders([a, b])) expect(entry.handledBy).toEqual([entry.holder]);
      expect(new Set(holders([a, b]).map((entry) => entry.holder)).size).toBe(2);

      // the holder of half the partitions dies without a word (its connection gone, as a SIGKILL leaves it);
      // once the server has seen it go (a commit delivered in the instant before comes back after the ack wait)
      await serverSawClose(first.connection);
      await round();
      for (const entry of holders([b])) expect(entry.handledBy).toEqual([b]);

      // a new instance takes the partitions it ranks best on at once
      const third = await start(c);
      try {
        await pullsWaiting(2);
        await round();
        const now = holders([b, c]);
        for (const entry of now) expect(entry.handledBy).toEqual([entry.holder]);
        expect(now.some((entry) => entry.holder === c)).toBe(true);
      } finally {
        await third.consumer.stop();
        await third.connection.close();
      }
    } finally {
      await second.consumer.stop();
      await second.connection.close();
      await first.consumer.stop().catch(() => undefined);
    }
  }, 60_000);

  it("hands a partition's commit back when the instance holding the partition is full, so an idle sibling runs it at once", async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const [busy, idle] = distinctIds(2) as [string, string];
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const handled: { conversation: string; partition: number; instance: string; deliveryCount: number }[] = [];
    const start = async (instance: string) => {
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
      const metrics = new ServiceMetrics('test');
      const consumer = await startCommitConsumer({
        js: jetstream(nc),
        stream: name,
        consumer: 'step-worker',
        partitions,
        subjectPrefix: prefix,
        ackWaitMs: 30_000,
        logger: pino({ level: 'silent' }),
        metrics,
        // one commit at a time and none held beyond it
        concurrency: 1,
        handler: async (delivery) => {
          handled.push({
            conversation: delivery.ref!.conversation,
            partition: Number(delivery.subject.split('.').at(-1)),
            instance,
            deliveryCount: delivery.deliveryCount,
          });
          if (instance === busy) await blocked;
          return { ack: true, outcome: 'ok' };
        },
      });
      return { consumer, metrics };
    };
    const first = await start(busy);
    const second = await start(idle);
    try {
      // the first commit keeps `busy` full (it holds every partition it ranks best on)
      const append = (conversation: string) =>
        gateway.append(
          { tenant: 'acme', conversation },
          [
            draftEvent({ tenant: 'acme', conversation, source: 'user' }, 'message', {
              role: 'user',
              content: [{ type: 'text', text: 'hi' }],
            }),
          ],
          { expected: { streamSeq: 0, lastSeq: 0 } },
        );
      const holds = (partition: number) => partitionPriority(busy, partition) < partitionPriority(idle, partition);
      let blocker = 0;
      for (; ; blocker += 1) {
        await append(`first-${blocker}`);
        await expect.poll(() => handled.length, { timeout: 5_000 }).toBe(blocker + 1);
        if (handled.at(-1)!.instance === busy) break;
      }
      // while it is full, every other conversation is run by the idle one, those of busy's partitions included
      const others = Array.from({ length: 12 }, (_, index) => `later-${index}`);
      for (const conversation of others) await append(conversation);
      await expect
        .poll(() => handled.filter((entry) => entry.conversation.startsWith('later-')).length, { timeout: 10_000 })
        .toBe(others.length);
      const later = handled.filter((entry) => entry.conversation.startsWith('later-'));
      expect(later.every((entry) => entry.instance === idle)).toBe(true);
      const handedBack = later.filter((entry) => holds(entry.partition));
      expect(handedBack.length).toBeGreaterThan(0);
      expect(
        (await first.metrics.registry.getSingleMetricAsString('flotilla_commits_handled_total')).includes(
          'outcome="handed_back_full"',
        ),
      ).toBe(true);
    } finally {
      release();
      await first.consumer.stop();
      await second.consumer.stop();
    }
  }, 60_000);

  it('ranks the instances that announce themselves among each other: each owns half the partitions, none shares one, and a leaving one hands its half over', async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const handled = new Map<string, Set<string>>();
    const partitionOf = new Map<string, number>();
    let count = 0;
    const start = async (instance: string) => {
      const connection = await connect({ servers: server.url });
      // the consumer, once started, is told of every change of members
      const started: { consumer?: CommitConsumer } = {};
      const members = await GroupMembers.join({
        nc: connection,
        group: 'step-worker',
        instanceId: instance,
        onChange: (live) => started.consumer?.prioritize(partitionPriorities(instance, live)),
      });
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        members: members.members,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
      const consumer = await startCommitConsumer({
        js: jetstream(connection),
        stream: name,
        consumer: 'step-worker',
        partitions,
        subjectPrefix: prefix,
        ackWaitMs: 30_000,
        logger: pino({ level: 'silent' }),
        metrics: new ServiceMetrics('test'),
        concurrency: 64,
        handler: async (delivery) => {
          const conversation = delivery.ref!.conversation;
          partitionOf.set(conversation, Number(delivery.subject.split('.').at(-1)));
          handled.set(conversation, (handled.get(conversation) ?? new Set()).add(instance));
          count += 1;
          return { ack: true, outcome: 'ok' };
        },
      });
      started.consumer = consumer;
      return { connection, consumer, members };
    };
    const conversations = Array.from({ length: 64 }, (_, index) => `c${index}`);
    const tails = new Map(conversations.map((conversation) => [conversation, { streamSeq: 0, lastSeq: 0 }]));
    /** One commit to each conversation; who handled each. */
    const round = async (): Promise<Map<string, Set<string>>> => {
      const before = count;
      handled.clear();
      for (const conversation of conversations) {
        const ref = { tenant: 'acme', conversation };
        const text = draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: 'hi' }],
        });
        const appended = await gateway.append(ref, [text], { expected: tails.get(conversation)! });
        tails.set(conversation, { streamSeq: appended.streamSeq, lastSeq: appended.lastSeq });
      }
      await expect.poll(() => count - before, { timeout: 10_000 }).toBe(conversations.length);
      return new Map(handled);
    };

    const a = await start('instance-a');
    const b = await start('instance-b');
    try {
      await expect.poll(() => a.members.members, { timeout: 5_000 }).toEqual(['instance-a', 'instance-b']);
      expect(b.members.members).toEqual(['instance-a', 'instance-b']);
      // the first instance's pulls from before it knew of the second expire, and its next ones carry its new priorities
      await new Promise((resolve) => setTimeout(resolve, PARTITION_PULL_EXPIRES_MS + 500));
      // two rounds: on a partition two instances tied on, the server would alternate its commits between them
      const ownerOf = (partition: number) =>
        ['instance-a', 'instance-b'].find(
          (instance) => partitionPriorities(instance, ['instance-a', 'instance-b'])[partition] === 0,
        );
      for (const shared of [await round(), await round()])
        for (const [conversation, by] of shared) expect([...by]).toEqual([ownerOf(partitionOf.get(conversation)!)]);
      const owned = (instance: string) =>
        partitionPriorities(instance, ['instance-a', 'instance-b']).filter((priority) => priority === 0).length;
      expect([owned('instance-a'), owned('instance-b')]).toEqual([PARTITIONS / 2, PARTITIONS / 2]);
      expect(new Set([...partitionOf.values()].map(ownerOf)).size).toBe(2);

      // a graceful stop says goodbye: the other ranks itself alone at once, and runs everything
      a.members.leave();
      await a.consumer.stop();
      await expect.poll(() => b.members.members, { timeout: 1_000 }).toEqual(['instance-b']);
      const alone = await round();
      expect([...alone.values()].every((set) => set.size === 1 && set.has('instance-b'))).toBe(true);
    } finally {
      b.members.leave();
      await b.consumer.stop();
      await a.consumer.stop().catch(() => undefined);
      await a.connection.close();
      await b.connection.close();
    }
  }, 60_000);

  it('forgets a member that stops announcing itself, and ignores what is not an announcement', async () => {
    const connection = await connect({ servers: server.url });
    const invalid: string[] = [];
    const seen: (readonly string[])[] = [];
    const group = `g${uniqueName('m').toLowerCase()}`;
    const members = await GroupMembers.join({
      nc: connection,
      group,
      instanceId: 'watcher',
      heartbeatMs: 100,
      onChange: (live) => seen.push(live),
      onInvalid: (reason) => invalid.push(reason),
    });
    try {
      nc.publish(memberSubject(group), 'not json');
      nc.publish(memberSubject(group), JSON.stringify({ v: 1, instance: '', state: 'alive' }));
      nc.publish(memberSubject(group), JSON.stringify({ v: 1, instance: 'ghost', state: 'alive' }));
      await expect.poll(() => members.members, { timeout: 1_000 }).toEqual(['ghost', 'watcher']);
      expect(invalid).toHaveLength(2);
      // not heard for 3.5 heartbeats: gone
      await expect.poll(() => members.members, { timeout: 2_000 }).toEqual(['watcher']);
      expect(seen).toEqual([['ghost', 'watcher'], ['watcher']]);
    } finally {
      members.leave();
      await connection.close();
    }
  });
});
