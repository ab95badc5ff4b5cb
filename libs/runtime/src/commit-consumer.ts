import { CommitHeader } from '@flotilla/events';
import { eventTypesOf, parseConversationSubject, type ConversationRef, type RawMessage } from '@flotilla/log';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { AckBatch } from './ack-batch.js';
import { BatchedPull, type ConsumedMessage } from './batched-pull.js';
import type { HeapRelease } from './heap-release.js';
import type { ServiceMetrics } from './metrics.js';
import type { OwnCommits } from './own-commits.js';
import { QueuedCommits } from './queued-commits.js';
import { TenantQueue } from './tenant-queue.js';

/** One delivered commit, as a wake-up for a conversation. */
export type Delivery = {
  /** Undefined for a message on a subject outside the conversation layout. */
  readonly ref: ConversationRef | undefined;
  readonly subject: string;
  readonly streamSeq: number;
  /** The delivered message itself (a commit, usually): a cached conversation extends from it without a read. */
  readonly message: RawMessage;
  /**
   * True when the server had nothing newer pending for this group when it delivered the commit,
   * and that was moments ago: the commit is taken as the conversation's tail without asking the
   * log (a commit appended since makes the handler's own append conflict, as it would anyway).
   */
  readonly likelyTail: boolean;
  /** The commit's event types, from its Flotilla-Event-Types header (empty for foreign messages). */
  eventTypes(): readonly string[];
  /** One header of the delivered message ('' when absent), read when asked (e.g. its traceparent, by a traced handler). */
  header(name: string): string;
  /**
   * The event seqs the commit holds, from its Flotilla-First-Seq and Flotilla-Event-Count headers;
   * undefined when they are missing or malformed (a foreign message).
   */
  eventSpan(): EventSpan | undefined;
  /**
   * True when a later commit of the same conversation is already queued in this process behind
   * this one: this one is not the tail, and the later one will be handled (or redelivered).
   */
  laterQueued(): boolean;
  /**
   * Resolves true as soon as a later commit of the same conversation is queued here (at once if
   * one is), false after `ms` or on shutdown: a handler that writes once for several commits waits
   * for the next one without holding on past its arrival.
   */
  laterQueuedWithin(ms: number): Promise<boolean>;
  readonly deliveryCount: number;
  /** Aborted on shutdown: stop, and the commit goes back to the group at once. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
};

export type EventSpan = { readonly firstSeq: number; readonly lastSeq: number };

export type HandleOutcome =
  /** Done (or nothing to do): acknowledge. */
  | { readonly ack: true; readonly outcome: string }
  /** Not now: redeliver after the delay (to any instance of the group). */
  | { readonly ack: false; readonly outcome: string; readonly delayMs: number };

export type CommitHandler = (delivery: Delivery) => Promise<HandleOutcome>;

/** How recently a commit must have been stored for its delivery's "nothing pending" to be trusted. */
const LIKELY_TAIL_WINDOW_MS = 250;

export type CommitConsumerOptions = {
  readonly js: JetStreamClient;
  readonly stream: string;
  /** The group's own consumer. */
  readonly consumer: string;
  /**
   * A partitioned group's partition consumers (libs/bus groupConsumers), pulled from besides its
   * own with this instance's priority on each: the server delivers a partition's commits to the
   * live instance of best priority that has room (`prioritized` policy).
   */
  readonly partitions?: readonly PartitionPull[];
  readonly subjectPrefix: string;
  readonly concurrency: number;
  readonly ackWaitMs: number;
  readonly handler: CommitHandler;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  /** Told when commits arrive and settle, to give the heap back once a burst is over. */
  readonly heapRelease?: HeapRelease;
  /** Where handled commits' acks wait to share a write (default: sent at the end of the turn). */
  readonly acks?: AckBatch;
  /**
   * Pull in batches, at most one pull per `intervalMs` while commits keep coming (BatchedPull), for
   * a group that need not hear of each commit the moment it lands. Default: a standing pull, each
   * commit delivered as it lands.
   */
  readonly batched?: { readonly nc: NatsConnection; readonly intervalMs: number };
  /**
   * Hand a conversation's commits to the handler without waiting for its previous one to be
   * handled (still in delivery order), for a handler that keeps their order itself (the
   * PostgreSQL sink writes those it holds together). Default: one after another.
   */
  readonly concurrentPerConversation?: boolean;
  /**
   * For a group not delivered its own kind of commit: the commits the handler appended to the
   * conversation, each handed back to it as a delivery before the one that woke it is
   * acknowledged (see OwnCommits).
   */
  readonly ownCommits?: OwnCommits;
  /**
   * Pull ahead of the free slots and serve what waits fairly across tenants (TenantQueue), not in
   * delivery order. Default: nothing held beyond the slots, nothing reserved (each commit waits
   * for a slot in the order it came).
   */
  readonly fairness?: Fairness;
};

export type Fairness = {
  /** Commits held waiting for a slot, at most (and at most `lookaheadBytes` of them). */
  readonly lookahead: number;
  readonly lookaheadBytes: number;
  /** Free slots kept for tenants under their share while several are active. */
  readonly reserve: number;
};

/** How long a tenant counts as active after its last commit: longer than a step's tool hop, so a tenant between steps keeps its share. */
const TENANT_ACTIVE_FOR_MS = 5_000;

export type PartitionPull = {
  readonly consumer: string;
  readonly group: string;
  readonly partition: number;
  /** This instance's priority on the partition when it starts (`prioritize` changes it). */
  readonly priority: number;
};

/** How long a partition's pull waits on the server: how long a stalled instance holds its partitions, at most. */
export const PARTITION_PULL_EXPIRES_MS = 3_000;

/** Own commits handed back to the handler after one delivery, at most (a step or tool loop goes on through later deliveries). */
const MAX_OWN_ROUNDS = 50;

export type CommitConsumer = {
  /** Stop pulling, abort in-flight work and hand its commits back (nak) at once. */
  stop(): Promise<void>;
  /**
   * This instance's priority on each partition from now on (indexed by partition): the next pull
   * of each partition carries it, and the pulls waiting on the server keep theirs until they are
   * used up or expire (PARTITION_PULL_EXPIRES_MS).
   */
  prioritize(priorities: readonly number[]): void;
  readonly inFlight: () => number;
};

/**
 * Pulls the group's commits and hands each to the handler, up to `concurrency` at once. Commits
 * of one conversation are handled one after another in this process (a later one usually finds
 * the work done), unless `concurrentPerConversation`. Long handlers keep their commit with in-progress acks; a commit is acked only
 * when the handler says so, after the work it caused was appended.
 */
export async function startCommitConsumer(options: CommitConsumerOptions): Promise<CommitConsumer> {
  let slots = options.concurrency;
  const partitions = options.partitions ?? [];
  if (options.batched && partitions.length > 0) throw new Error('a batched pull takes one consumer, not partitions');
  const fairness = options.fairness ?? { lookahead: 0, lookaheadBytes: 0, reserve: 0 };
  if (options.batched && fairness.lookahead > 0)
    throw new Error('a batched pull pulls for its free slots only: no lookahead');
  const waiting = new TenantQueue<Waiting>({
    capacity: options.concurrency,
    reserve: fairness.reserve,
    activeForMs: TENANT_ACTIVE_FOR_MS,
  });
  let waitingBytes = 0;
  // what each pull holds for this process: the whole concurrency (and lookahead) through one consumer, a share of it
  // through several (at least 16 with a lookahead; without one, a full process hands back what comes beyond its slots)
  const wanted = options.concurrency + fairness.lookahead;
  const share = Math.max(fairness.lookahead > 0 ? 16 : 1, Math.ceil(wanted / Math.max(1, partitions.length)));
  const maxMessages = Math.max(1, Math.min(wanted, 1_000, partitions.length === 0 ? Infinity : share));
  /**
   * Each partition's consume(), by partition: nats.js (3.4) reads the priority of every pull it
   * sends from the consume's own copy of its options (`opts`), which `prioritize` changes, so a
   * new priority goes out with the next pull. A test in commit-consumer-partitions.test.ts holds
   * nats.js to that.
   */
  const prioritized = new Map<number, { readonly opts?: { priority?: unknown } }>();
  const consume = async (
    consumer: string,
    partition?: PartitionPull,
  ): Promise<AsyncIterable<ConsumedMessage> & { close(): Promise<unknown> }> => {
    const messages = await (
      await options.js.consumers.get(options.stream, consumer)
    ).consume({
      max_messages: maxMessages,
      // a stalled instance (stopped, paused, cut off) keeps its connection, and its waiting pulls keep its partitions
      // until they expire: short pulls hand them to the next instance within seconds
      ...(partition
        ? { group: partition.group, priority: partition.priority, expires: PARTITION_PULL_EXPIRES_MS }
        : {}),
    });
    if (partition) prioritized.set(partition.partition, messages as { readonly opts?: { priority?: unknown } });
    return messages;
  };
  const sources: (AsyncIterable<ConsumedMessage> & { close(): Promise<unknown>; capacityFreed?: () => void })[] =
    options.batched
      ? [
          new BatchedPull({
            nc: options.batched.nc,
            stream: options.stream,
            consumer: options.consumer,
            intervalMs: options.batched.intervalMs,
            capacity: () => slots,
            logger: options.logger,
          }),
        ]
      : await Promise.all([
          consume(options.consumer),
          ...partitions.map((partition) => consume(partition.consumer, partition)),
        ]);
  const shutdown = new AbortController();
  const tails = new Map<string, Promise<void>>();
  /** Per conversation with work queued here: the highest stream sequence delivered to this process. */
  const queued = new QueuedCommits(shutdown.signal);
  const running = new Set<Promise<void>>();
  // Commits being handled, and when each was last reported alive: one timer for all of them keeps
  // long handlers' commits from being redelivered (a timer per delivery cost a share of the CPU).
  const handling = new Map<ConsumedMessage, number>();
  const keepAlivePeriod = Math.max(250, Math.floor(options.ackWaitMs / 4));
  // a commit waiting for a slot is kept alive half as often (half the ack wait still left): a
  // flood's held backlog is thousands of commits, and each in-progress ack is a message the server handles
  const waitingPeriod = Math.max(keepAlivePeriod, Math.floor(options.ackWaitMs / 2));
  /** The commits in `handling` that wait for a slot. */
  const held = new Set<ConsumedMessage>();
  // checked four times a period: each commit is kept alive about a period after it came, so a
  // flood's thousands of held commits are not all kept alive in one turn (one burst of publishes)
  const keepAlive = setInterval(
    () => {
      const now = performance.now();
      for (const [message, since] of handling) {
        if (now - since < (held.has(message) ? waitingPeriod : keepAlivePeriod)) continue;
        message.working();
        handling.set(message, now);
      }
    },
    Math.max(250, Math.floor(keepAlivePeriod / 4)),
  );
  keepAlive.unref();
  /** Loops waiting for room among the held commits. */
  const roomWaiters: (() => void)[] = [];
  // without a lookahead the next commit is taken only for a free slot, so a busy instance leaves it
  // to a sibling with one (the overflow of partitions); with one, up to the lookahead waits here
  const hasRoom = (): boolean =>
    fairness.lookahead === 0
      ? waiting.held === 0 && slots > 0
      : waiting.held < fairness.lookahead && (fairness.lookaheadBytes === 0 || waitingBytes < fairness.lookaheadBytes);
  const tenantOf = (message: ConsumedMessage): string =>
    parseConversationSubject(options.subjectPrefix, message.subject)?.tenant ?? '';

  /** Gives free slots to the commits waiting, fairly across tenants. */
  const dispatch = (): void => {
    for (;;) {
      const next = waiting.next(slots);
      if (!next) break;
      slots -= 1;
      const { message, since } = next.item;
      held.delete(message);
      waitingBytes -= message.data.length;
      options.metrics.slotWaitSeconds.observe(
        { share: next.withinShare ? 'within' : 'over' },
        (performance.now() - since) / 1_000,
      );
      void handleOne(message).finally(() => {
        slots += 1;
        waiting.finished(next.tenant);
        dispatch();
        for (const source of sources) source.capacityFreed?.();
      });
    }
    options.metrics.waiting.set(waiting.held);
    while (roomWaiters.length > 0 && hasRoom()) roomWaiters.shift()!();
  };

  const acks = options.acks ?? new AckBatch(0);

  const handleOne = async (message: ConsumedMessage): Promise<void> => {
    const ref = parseConversationSubject(options.subjectPrefix, message.subject);
    const key = ref ? `${ref.tenant}.${ref.conversation}` : message.subject;
    let child: Logger | undefined;
    // created on first use: most deliveries log nothing, and a pino child is not free
    const logger = (): Logger =>
      (child ??= options.logger.child(
        ref ? { conversation: ref.conversation, tenant: ref.tenant, seq: message.seq } : { subject: message.subject },
      ));
    const previous = (options.concurrentPerConversation ? undefined : tails.get(key)) ?? Promise.resolve();
    const started = performance.now();
    options.metrics.inFlight.inc();
    const job = previous.then(async () => {
      if (shutdown.signal.aborted) {
        message.nak();
        return;
      }
      let outcome = 'error';
      const own = ref ? options.ownCommits : undefined;
      own?.watch(key);
      try {
        const delivered = (stored: RawMessage, count: number, likelyTail: boolean): Delivery => ({
          ref,
          get logger() {
            return logger();
          },
          subject: stored.subject,
          streamSeq: stored.seq,
          message: stored,
          likelyTail,
          eventTypes: () => eventTypesOf(stored),
          header: (name) => stored.headers?.get(name) ?? '',
          eventSpan: () => eventSpan(stored),
          laterQueued: () => queued.later(key, stored.seq),
          laterQueuedWithin: (ms) => queued.laterWithin(key, stored.seq, ms),
          deliveryCount: count,
          signal: shutdown.signal,
        });
        let result = await options.handler(
          delivered(
            { subject: message.subject, seq: message.seq, data: message.data, headers: message.headers },
            message.info.deliveryCount,
            isLikelyTail(message),
          ),
        );
        // the group's own commits, as if delivered: the process that wrote one carries on after it
        for (let round = 0; own && result.ack && round < MAX_OWN_ROUNDS && !shutdown.signal.aborted; round += 1) {
          const appended = own.take(key);
          if (!appended) break;
          const next = await options.handler(delivered(appended, 1, true));
          // "look again later" about what it owes after its own commit holds the waking commit back
          if (!next.ack) result = next;
        }
        outcome = result.outcome;
        if (shutdown.signal.aborted) message.nak();
        else if (result.ack) acks.add(message);
        else message.nak(result.delayMs);
      } catch (error) {
        if (shutdown.signal.aborted) {
          message.nak();
          outcome = 'shutdown';
        } else {
          const delay = Math.min(30_000, 500 * 2 ** Math.min(6, message.info.deliveryCount - 1));
          logger().error({ err: error, redeliverInMs: delay }, 'handling a commit failed; it will be redelivered');
          message.nak(delay);
        }
      } finally {
        own?.unwatch(key);
        handling.delete(message);
        options.metrics.inFlight.dec();
        options.metrics.commits.inc({ outcome });
        options.metrics.handleSeconds.observe({ outcome }, (performance.now() - started) / 1_000);
      }
    });
    tails.set(key, job);
    running.add(job);
    await job;
    running.delete(job);
    options.heapRelease?.settled(running.size);
    if (tails.get(key) === job) tails.delete(key);
    forget(key);
  };

  /** Per conversation: its commits held or being handled here; `queued` knows it while there are any. */
  const present = new Map<string, number>();
  const arrived = (message: ConsumedMessage): void => {
    const key = conversationKey(options.subjectPrefix, message.subject);
    present.set(key, (present.get(key) ?? 0) + 1);
    // a commit held for a slot is queued too: an earlier one of its conversation is not the tail
    queued.arrived(key, message.seq);
  };
  const forget = (key: string): void => {
    const left = (present.get(key) ?? 1) - 1;
    if (left > 0) present.set(key, left);
    else {
      present.delete(key);
      queued.forget(key);
    }
  };

  // one loop per consumer, all sharing the process's slots
  const names = options.batched
    ? [options.consumer]
    : [options.consumer, ...partitions.map((partition) => partition.consumer)];
  const loops = sources.map(async (messages, index) => {
    const delivered = options.metrics.deliveries.labels(names[index]!);
    for await (const message of messages) {
      delivered.inc();
      if (shutdown.signal.aborted) {
        message.nak();
        continue;
      }
      if (index > 0 && !hasRoom()) {
        // a partition's commit while another source's filled this process: it goes back to the group
        // at once, and this partition is pulled again only once there is room, so the server delivers
        // its commits to the sibling next in priority meanwhile (a full instance holds no partition's
        // pull). What it costs: while the group is full, a redelivery per partition pulled again as
        // slots free (with the step workers' and tool runners' lookahead, only once it is full too).
        // The group's own consumer is not prioritized: its commits wait here for room.
        message.nak();
        options.metrics.commits.inc({ outcome: 'handed_back_full' });
        await new Promise<void>((resolve) => roomWaiters.push(resolve));
        continue;
      }
      options.heapRelease?.busy();
      // kept alive while it waits: a flood's commits may wait longer than the ack wait
      const since = performance.now();
      handling.set(message, since);
      held.add(message);
      arrived(message);
      waiting.push(tenantOf(message), { message, since });
      waitingBytes += message.data.length;
      dispatch();
      if (!hasRoom()) await new Promise<void>((resolve) => roomWaiters.push(resolve));
    }
  });

  return {
    inFlight: () => running.size,
    prioritize(priorities) {
      for (const [partition, messages] of prioritized) {
        const priority = priorities[partition];
        if (priority !== undefined && typeof messages.opts?.priority === 'number') messages.opts.priority = priority;
      }
    },
    async stop() {
      shutdown.abort();
      clearInterval(keepAlive);
      await Promise.allSettled(sources.map((messages) => messages.close()));
      // what waited for a slot goes back to the group at once
      for (const { message } of waiting.drain()) {
        handling.delete(message);
        held.delete(message);
        message.nak();
      }
      waitingBytes = 0;
      for (const waiter of roomWaiters.splice(0)) waiter();
      await Promise.allSettled([...running]);
      acks.flush();
      await Promise.allSettled(loops);
    },
  };
}

/** A delivered commit waiting for a slot, and since when. */
type Waiting = { readonly message: ConsumedMessage; readonly since: number };

function conversationKey(subjectPrefix: string, subject: string): string {
  const ref = parseConversationSubject(subjectPrefix, subject);
  return ref ? `${ref.tenant}.${ref.conversation}` : subject;
}

function eventSpan(message: { readonly headers?: MsgHdrs | undefined }): EventSpan | undefined {
  const firstSeq = Number(message.headers?.get(CommitHeader.FirstSeq) || Number.NaN);
  const count = Number(message.headers?.get(CommitHeader.EventCount) || Number.NaN);
  if (!Number.isSafeInteger(firstSeq) || firstSeq < 1 || !Number.isSafeInteger(count) || count < 1) return undefined;
  return { firstSeq, lastSeq: firstSeq + count - 1 };
}

/** Nothing was pending for the group at delivery, the commit is recent, and this is its first delivery. */
function isLikelyTail(message: ConsumedMessage): boolean {
  const info = message.info;
  if (info.pending !== 0 || info.deliveryCount !== 1) return false;
  const ageMs = Date.now() - info.timestampNanos / 1_000_000;
  return ageMs < LIKELY_TAIL_WINDOW_MS;
}
