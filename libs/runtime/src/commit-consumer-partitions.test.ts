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

  /** One commit handled: of which conversation, on which partition, by which instance. */
  type Handled = { readonly conversation: string; readonly partition: number; readonly instance: string };

  /**
   * A stream of its own and instances of the step-worker group consuming it, each on a connection
   * of its own; every commit any of them handles is logged in `handled`, in order.
   */
  const partitionedGroup = async () => {
    const name = uniqueName('CC');
    const prefix = `t.${name.toLowerCase()}`;
    const gateway = await EventLog.open(nc, { streamName: name, subjectPrefix: prefix, writer: 'gateway' });
    const handled: Handled[] = [];
    const tails = new Map<string, { streamSeq: number; lastSeq: number }>();
    /**
     * An instance: `announce`, it joins the group's members and ranks itself among them;
     * `concurrency`, how many commits it runs at once; `hold`, what a commit it handles waits on.
     */
    const start = async (
      instance: string,
      options: { announce?: boolean; concurrency?: number; hold?: Promise<void> } = {},
    ) => {
      const connection = await connect({ servers: server.url });
      // the consumer, once started, is told of every change of members
      const started: { consumer?: CommitConsumer } = {};
      const members = options.announce
        ? await GroupMembers.join({
            nc: connection,
            group: 'step-worker',
            instanceId: instance,
            onChange: (live) => started.consumer?.prioritize(partitionPriorities(instance, live)),
          })
        : undefined;
      const partitions = await ensureGroupConsumers(gateway.jsm, {
        stream: name,
        group: 'step-worker',
        subjectPrefix: prefix,
        instanceId: instance,
        members: members?.members,
        ackWaitMs: 30_000,
        maxAckPending: 1_000,
      });
      const metrics = new ServiceMetrics('test');
      const consumer = await startCommitConsumer({
        js: jetstream(connection),
        stream: name,
        consumer: 'step-worker',
        partitions,
        subjectPrefix: prefix,
        ackWaitMs: 30_000,
        logger: pino({ level: 'silent' }),
        metrics,
        concurrency: options.concurrency ?? 64,
        handler: async (delivery) => {
          handled.push({
            conversation: delivery.ref!.conversation,
            partition: Number(delivery.subject.split('.').at(-1)),
            instance,
          });
          await options.hold;
          return { ack: true, outcome: 'ok' };
        },
      });
      started.consumer = consumer;
      /** Says goodbye (when it announced itself), stops consuming and closes its connection; once. */
      let stopped: Promise<void> | undefined;
      const stop = () =>
        (stopped ??= (async () => {
          members?.leave();
          await consumer.stop().catch(() => undefined);
          await connection.close().catch(() => undefined);
        })());
      return { connection, consumer, members, metrics, stop };
    };
    /** One user message to `conversation`, after its last. */
    const append = async (conversation: string): Promise<void> => {
      const ref = { tenant: 'acme', conversation };
      const text = draftEvent({ ...ref, source: 'user' }, 'message', {
        role: 'user',
        content: [{ type: 'text', text: 'hi' }],
      });
      const appended = await gateway.append(ref, [text], {
        expected: tails.get(conversation) ?? { streamSeq: 0, lastSeq: 0 },
      });
      tails.set(conversation, { streamSeq: appended.streamSeq, lastSeq: appended.lastSeq });
    };
    const conversations = Array.from({ length: 64 }, (_, index) => `c${index}`);
    /** One commit to each of 64 conversations; who handled each, and on which partition. */
    const round = async (): Promise<Map<string, { partition: number; by: string[] }>> => {
      const before = handled.length;
      for (const conversation of conversations) await append(conversation);
      await expect.poll(() => handled.length - before, { timeout: 10_000 }).toBe(conversations.length);
      const byConversation = new Map<string, { partition: number; by: string[] }>();
      for (const entry of handled.slice(before)) {
        const seen = byConversation.get(entry.conversation) ?? { partition: entry.partition, by: [] };
        byConversation.set(entry.conversation, { ...seen, by: [...new Set([...seen.by, entry.instance])] });
      }
      return byConversation;
    };
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
    return { start, append, round, pullsWaiting, handled };
  };

  it("delivers each conversation's commits to the live instance holding its partition, and moves them at once when it dies or a better one starts", async () => {
    const group = await partitionedGroup();
    const [a, b, c] = distinctIds(3) as [string, string, string];
    /** The holder of `partition` among `live`: the best priority. */
    const holder = (live: readonly string[], partition: number) =>
      [...live].sort((x, y) => partitionPriority(x, partition) - partitionPriority(y, partition))[0];
    const first = await group.start(a);
    const second = await group.start(b);
    try {
      await group.pullsWaiting(2);
      const both = await group.round();
      for (const { partition, by } of both.values()) expect(by).toEqual([holder([a, b], partition)]);
      expect(new Set([...both.values()].map(({ partition }) => holder([a, b], partition))).size).toBe(2);

      // the holder of half the partitions dies without a word (its connection gone, as a SIGKILL leaves it);
      // once the server has seen it go (a commit delivered in the instant before comes back after the ack wait)
      await serverSawClose(first.connection);
      for (const { by } of (await group.round()).values()) expect(by).toEqual([b]);

      // a new instance takes the partitions it ranks best on at once
      const third = await group.start(c);
      try {
        await group.pullsWaiting(2);
        const now = await group.round();
        for (const { partition, by } of now.values()) expect(by).toEqual([holder([b, c], partition)]);
        expect([...now.values()].some(({ by }) => by[0] === c)).toBe(true);
      } finally {
        await third.stop();
      }
    } finally {
      await second.stop();
      await first.stop();
    }
  }, 60_000);

  it("hands a partition's commit back when the instance holding the partition is full, so an idle sibling runs it at once", async () => {
    const group = await partitionedGroup();
    const [busy, idle] = distinctIds(2) as [string, string];
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    // one commit at a time and none held beyond it
    const first = await group.start(busy, { concurrency: 1, hold: blocked });
    const second = await group.start(idle, { concurrency: 1 });
    try {
      // the first commit keeps `busy` full (it holds every partition it ranks best on)
      const holds = (partition: number) => partitionPriority(busy, partition) < partitionPriority(idle, partition);
      for (let blocker = 0; ; blocker += 1) {
        await group.append(`first-${blocker}`);
        await expect.poll(() => group.handled.length, { timeout: 5_000 }).toBe(blocker + 1);
        if (group.handled.at(-1)!.instance === busy) break;
      }
      // while it is full, every other conversation is run by the idle one, those of busy's partitions included
      const others = Array.from({ length: 12 }, (_, index) => `later-${index}`);
      for (const conversation of others) await group.append(conversation);
      const later = () => group.handled.filter((entry) => entry.conversation.startsWith('later-'));
      await expect.poll(() => later().length, { timeout: 10_000 }).toBe(others.length);
      expect(later().every((entry) => entry.instance === idle)).toBe(true);
      expect(later().filter((entry) => holds(entry.partition)).length).toBeGreaterThan(0);
      expect(
        (await first.metrics.registry.getSingleMetricAsString('flotilla_commits_handled_total')).includes(
          'outcome="handed_back_full"',
        ),
      ).toBe(true);
    } finally {
      release();
      await first.stop();
      await second.stop();
    }
  }, 60_000);

  it('ranks the instances that announce themselves among each other: each owns half the partitions, none shares one, and a leaving one hands its half over', async () => {
    const group = await partitionedGroup();
    const a = await group.start('instance-a', { announce: true });
    const b = await group.start('instance-b', { announce: true });
    try {
      await expect.poll(() => a.members!.members, { timeout: 5_000 }).toEqual(['instance-a', 'instance-b']);
      expect(b.members!.members).toEqual(['instance-a', 'instance-b']);
      // the first instance's pulls from before it knew of the second expire, and its next ones carry its new priorities
      await new Promise((resolve) => setTimeout(resolve, PARTITION_PULL_EXPIRES_MS + 500));
      // two rounds: on a partition two instances tied on, the server would alternate its commits between them
      const ownerOf = (partition: number) =>
        ['instance-a', 'instance-b'].find(
          (instance) => partitionPriorities(instance, ['instance-a', 'instance-b'])[partition] === 0,
        );
      const rounds = [await group.round(), await group.round()];
      for (const { partition, by } of rounds.flatMap((round) => [...round.values()]))
        expect(by).toEqual([ownerOf(partition)]);
      const owned = (instance: string) =>
        partitionPriorities(instance, ['instance-a', 'instance-b']).filter((priority) => priority === 0).length;
      expect([owned('instance-a'), owned('instance-b')]).toEqual([PARTITIONS / 2, PARTITIONS / 2]);
      expect(new Set([...rounds[0]!.values()].map(({ partition }) => ownerOf(partition))).size).toBe(2);

      // a graceful stop says goodbye: the other ranks itself alone at once, and runs everything
      await a.stop();
      await expect.poll(() => b.members!.members, { timeout: 1_000 }).toEqual(['instance-b']);
      for (const { by } of (await group.round()).values()) expect(by).toEqual(['instance-b']);
    } finally {
      await b.stop();
      await a.stop();
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
