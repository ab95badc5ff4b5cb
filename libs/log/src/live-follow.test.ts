import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  authorizationConfig,
  connectionOptions,
  DEFAULT_STREAM_NAMES,
  ensureUsers,
  loadBusSettings,
  userEnvironment,
} from '@flotilla/bus';
import { freePort, NatsServerProcess, startNats, uniqueName } from '@flotilla/testing';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import type { ConversationRef } from './conversation-ref.js';
import { EventLog } from './event-log.js';
import type { ReadOptions } from './event-log-options.js';
import { EMPTY_TAIL, type Tail } from './stored-commit.js';
import { logFixture, newRef, userMessage } from './test-support/fixtures.js';

// The backstop poll is set far beyond every wait below: what the followers get, they get from
// their wake-ups (the core subscription, the reconnect), not from a poll.
const NO_BACKSTOP = { followBackstopMs: 600_000 };

type Follower = { readonly seqs: number[]; readonly done: Promise<void> };

/** Follows `ref` until `signal` aborts, collecting every event seq yielded. */
function follower(log: EventLog, ref: ConversationRef, signal: AbortSignal, options: ReadOptions = {}): Follower {
  const seqs: number[] = [];
  const done = (async () => {
    for await (const commit of log.follow(ref, { ...options, signal }))
      seqs.push(...commit.events.map((event) => event.seq));
  })();
  return { seqs, done };
}

/** Appends one commit of `count` events after `tail`, retrying while the server is away (a restart). */
async function appendEvents(log: EventLog, ref: ConversationRef, tail: Tail, count = 1): Promise<Tail> {
  const drafts = Array.from({ length: count }, (_, index) => userMessage(ref, `after ${tail.lastSeq}: ${index}`));
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const commit = await log.append(ref, drafts, { expected: tail, commitId: `${ref.conversation}-${tail.lastSeq}` });
      return { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`could not append to ${ref.conversation} after a restart for 20 s`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const upTo = (last: number, after = 0): number[] =>
  Array.from({ length: last - after }, (_, index) => after + 1 + index);

async function consumerCount(log: EventLog): Promise<number> {
  return (await log.jsm.streams.info(log.streamName)).state.consumer_count;
}

/** Samples the stream's consumer count until stopped (samples taken while the server is away are skipped). */
function sampleConsumers(log: EventLog): { stop(): number[] } {
  const seen: number[] = [];
  const timer = setInterval(
    () =>
      void consumerCount(log).then(
        (count) => seen.push(count),
        () => undefined,
      ),
    20,
  );
  return {
    stop() {
      clearInterval(timer);
      return seen;
    },
  };
}

const subscriptionsOf = (nc: NatsConnection): number =>
  (nc as unknown as { protocol: { subscriptions: { size(): number } } }).protocol.subscriptions.size();
const statusListenersOf = (nc: NatsConnection): number =>
  (nc as unknown as { protocol: { listeners: unknown[] } }).protocol.listeners.length;

describe('EventLog.follow without a consumer', () => {
  it('gives several followers every commit once and in order, across a server restart, with no consumer on the stream', async () => {
    const reports: string[] = [];
    await using fixture = await logFixture({
      ...NO_BACKSTOP,
      appendTimeoutMs: 1_000,
      onInvalid: (report) => reports.push(report.reason),
    });
    const { log, nc, server } = fixture;
    const [a, b, c] = [newRef(), newRef(), newRef()];
    const tails = new Map<ConversationRef, Tail>([
      [a, EMPTY_TAIL],
      [b, EMPTY_TAIL],
      [c, EMPTY_TAIL],
    ]);
    const add = async (ref: ConversationRef, count = 1): Promise<void> =>
      void tails.set(ref, await appendEvents(log, ref, tails.get(ref)!, count));
    await add(a, 2);
    await add(a);
    await add(b);
    const subscribedBefore = subscriptionsOf(nc);
    const listenersBefore = statusListenersOf(nc);
    const sampler = sampleConsumers(log);
    const controller = new AbortController();
    const followers = {
      aWhole: follower(log, a, controller.signal),
      aFromTwo: follower(log, a, controller.signal, { afterSeq: 2 }),
      aFromTail: follower(log, a, controller.signal, { afterSeq: 3, afterStreamSeq: tails.get(a)!.streamSeq }),
      b: follower(log, b, controller.signal),
      c: follower(log, c, controller.signal),
    };
    const expectSeen = async (wanted: Record<keyof typeof followers, number[]>): Promise<void> => {
      for (const [name, seqs] of Object.entries(wanted)) {
        await expect
          .poll(() => followers[name as keyof typeof followers].seqs, { timeout: 15_000, message: `follower ${name}` })
          .toEqual(seqs);
      }
    };
    try {
      await expectSeen({ aWhole: upTo(3), aFromTwo: [3], aFromTail: [], b: [1], c: [] });

      // commits during the follow, one of several events, and a foreign message between them
      await add(a, 3);
      await add(b);
      await add(c);
      const foreign = await jetstream(nc).publish(log.subject(b), 'not a commit');
      tails.set(b, { streamSeq: foreign.seq, lastSeq: tails.get(b)!.lastSeq });
      await add(b);
      await expectSeen({ aWhole: upTo(6), aFromTwo: upTo(6, 2), aFromTail: upTo(6, 3), b: upTo(3), c: [1] });
      expect(reports.some((reason) => /foreign/.test(reason))).toBe(true);

      // the server restarts (killed): commits after it reach every follower, none lost or repeated
      await server.restart();
      for (let round = 0; round < 3; round += 1) {
        await add(a);
        await add(b, 2);
        await add(c);
      }
      await expectSeen({ aWhole: upTo(9), aFromTwo: upTo(9, 2), aFromTail: upTo(9, 3), b: upTo(9), c: upTo(4) });
    } finally {
      controller.abort();
      await Promise.all(Object.values(followers).map((each) => each.done));
    }
    const seen = sampler.stop();
    expect(seen.length).toBeGreaterThan(10);
    expect(Math.max(...seen)).toBe(0);
    expect(await consumerCount(log)).toBe(0);
    // nothing left behind: no subscription, no status listener
    await expect.poll(() => subscriptionsOf(nc)).toBe(subscribedBefore);
    expect(statusListenersOf(nc)).toBe(listenersBefore);
  });

  it('ends when the caller stops reading, and unsubscribes', async () => {
    await using fixture = await logFixture(NO_BACKSTOP);
    const { log, nc } = fixture;
    const ref = newRef();
    const first = await appendEvents(log, ref, EMPTY_TAIL);
    const subscribedBefore = subscriptionsOf(nc);
    const seen: number[] = [];
    const following = (async () => {
      for await (const commit of log.follow(ref)) {
        seen.push(commit.lastSeq);
        if (commit.lastSeq === 2) break;
      }
    })();
    await expect.poll(() => seen).toEqual([1]);
    expect(subscriptionsOf(nc)).toBe(subscribedBefore + 1);
    await appendEvents(log, ref, first);
    await following;
    expect(seen).toEqual([1, 2]);
    expect(subscriptionsOf(nc)).toBe(subscribedBefore);
  });

  it('keeps 1,100 followers of different conversations on one connection, every one getting its commits, with no consumer', async () => {
    await using fixture = await logFixture(NO_BACKSTOP);
    const { log, nc } = fixture;
    const refs = Array.from({ length: 1_100 }, () => newRef());
    const tails = new Map<ConversationRef, Tail>();
    const appendAll = async (): Promise<void> => {
      for (let start = 0; start < refs.length; start += 100) {
        await Promise.all(
          refs
            .slice(start, start + 100)
            .map(async (ref) => void tails.set(ref, await appendEvents(log, ref, tails.get(ref) ?? EMPTY_TAIL))),
        );
      }
    };
    await appendAll();
    const subscribedBefore = subscriptionsOf(nc);
    const sampler = sampleConsumers(log);
    const controller = new AbortController();
    const followers = refs.map((ref) => follower(log, ref, controller.signal));
    try {
      const behind = (seqs: number): number => followers.filter((each) => each.seqs.length < seqs).length;
      await expect.poll(() => behind(1), { timeout: 30_000, message: 'followers without their first commit' }).toBe(0);
      // the nats-server in use refuses a stream's 1,001st consumer: the followers hold none
      expect(await consumerCount(log)).toBe(0);
      await appendAll();
      await expect
        .poll(() => behind(2), { timeout: 30_000, message: 'followers without the commit appended while they follow' })
        .toBe(0);
      for (const each of followers) expect(each.seqs).toEqual([1, 2]);
    } finally {
      controller.abort();
      await Promise.all(followers.map((each) => each.done));
    }
    const seen = sampler.stop();
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBe(0);
    await expect.poll(() => subscriptionsOf(nc)).toBe(subscribedBefore);
  }, 90_000);

  it('follows a replicated stream from a connection to another node than the writer’s, every commit once and in order', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-follow-r3-'));
    const nodes: NatsServerProcess[] = [];
    try {
      const routes = await Promise.all([0, 1, 2].map(() => freePort()));
      const clusterConfig = (index: number): string =>
        [
          `server_name: "n${index}"`,
          'cluster {',
          '  name: "follow"',
          `  listen: "127.0.0.1:${routes[index]}"`,
          `  routes: [${routes.map((port) => `"nats-route://127.0.0.1:${port}"`).join(', ')}]`,
          '}',
          '',
        ].join('\n');
      nodes.push(
        ...(await Promise.all(
          [0, 1, 2].map((index) =>
            NatsServerProcess.start({ storeDir: join(dir, `n${index}`), config: clusterConfig(index) }),
          ),
        )),
      );
      const writer = await connect({ servers: nodes[0]!.url, maxReconnectAttempts: -1 });
      const reader = await connect({ servers: nodes[2]!.url, maxReconnectAttempts: -1 });
      try {
        const name = uniqueName('EV');
        const options = { streamName: name, subjectPrefix: `t.${name.toLowerCase()}`, replicas: 3, ...NO_BACKSTOP };
        // the cluster elects its JetStream meta leader a moment after the nodes are up
        let writerLog: EventLog | undefined;
        const deadline = Date.now() + 30_000;
        while (!writerLog) {
          writerLog = await EventLog.open(writer, options).catch((error: unknown) => {
            if (Date.now() > deadline) throw error;
            return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 250));
          });
        }
        const readerLog = await EventLog.open(reader, options);
        const ref = newRef();
        let tail = await appendEvents(writerLog, ref, EMPTY_TAIL);
        const controller = new AbortController();
        const followers = [
          follower(readerLog, ref, controller.signal),
          follower(readerLog, ref, controller.signal, { afterSeq: 1 }),
        ];
        try {
          await expect.poll(() => followers[0]!.seqs).toEqual([1]);
          for (let index = 0; index < 30; index += 1) tail = await appendEvents(writerLog, ref, tail, 1 + (index % 3));
          await expect.poll(() => followers[0]!.seqs, { timeout: 15_000 }).toEqual(upTo(tail.lastSeq));
          await expect.poll(() => followers[1]!.seqs, { timeout: 15_000 }).toEqual(upTo(tail.lastSeq, 1));
        } finally {
          controller.abort();
          await Promise.all(followers.map((each) => each.done));
        }
        expect(await consumerCount(readerLog)).toBe(0);
      } finally {
        await writer.close();
        await reader.close();
      }
    } finally {
      await Promise.all(nodes.map((node) => node[Symbol.asyncDispose]()));
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("follows with the gateway's credential from the permission matrix, and tells a user who may not subscribe what it lacks", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-follow-permissions-'));
    try {
      const users = new Map(
        (await ensureUsers(join(dir, 'users'), ['gateway', 'step-worker'])).map((user) => [user.user, user]),
      );
      await using server = await startNats({
        storeDir: join(dir, 'store'),
        config: authorizationConfig([...users.values()]),
        preferExternal: false,
      });
      const as = async (user: string): Promise<NatsConnection> =>
        connect({
          ...connectionOptions(
            loadBusSettings({ FLOTILLA_NATS_URL: server.url, ...userEnvironment(users.get(user)!) }),
            { name: user, identity: user },
          ),
          maxReconnectAttempts: 0,
        });
      const gateway = await as('gateway');
      const worker = await as('step-worker');
      try {
        const log = await EventLog.open(gateway, {
          streamName: DEFAULT_STREAM_NAMES.stream,
          subjectPrefix: DEFAULT_STREAM_NAMES.subjectPrefix,
          writer: 'gateway',
          ...NO_BACKSTOP,
        });
        const ref = newRef();
        const first = await appendEvents(log, ref, EMPTY_TAIL);
        const controller = new AbortController();
        const followed = follower(log, ref, controller.signal);
        await expect.poll(() => followed.seqs).toEqual([1]);
        // another service appends (the step worker may): the gateway's follower is woken
        const workerLog = await EventLog.open(worker, {
          streamName: DEFAULT_STREAM_NAMES.stream,
          subjectPrefix: DEFAULT_STREAM_NAMES.subjectPrefix,
          writer: 'step-worker',
        });
        await appendEvents(workerLog, ref, first, 2);
        await expect.poll(() => followed.seqs).toEqual([1, 2, 3]);
        expect(await consumerCount(log)).toBe(0);
        controller.abort();
        await followed.done;
        // the step worker follows nothing: it may not subscribe to a conversation's subject
        const refused = (async () => {
          for await (const _commit of workerLog.follow(ref, { signal: AbortSignal.timeout(10_000) })) return;
        })();
        await expect(refused).rejects.toMatchObject({
          code: 'forbidden',
          message: expect.stringMatching(/permission to subscribe/),
        });
      } finally {
        await gateway.close();
        await worker.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
