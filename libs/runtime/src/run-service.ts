import {
  checkBucketStorage,
  connectBus,
  describeBus,
  PARTITIONED_GROUPS,
  partitionOwners,
  partitionPriorities,
  SELF_CONTINUING,
  UnsupportedServerError,
  whileUnavailable,
} from '@flotilla/bus';
import { prepareValidation } from '@flotilla/events';
import { EventLog, type EventLogOptions } from '@flotilla/log';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { AckBatch } from './ack-batch.js';
import { adoptAllocator } from './allocator.js';
import {
  PARTITION_PULL_EXPIRES_MS,
  startCommitConsumer,
  type CommitConsumer,
  type CommitHandler,
  type PartitionPull,
} from './commit-consumer.js';
import { ensureDurableConsumer, ensureGroupConsumers } from './durable-consumer.js';
import { GroupMembers } from './group-members.js';
import { OwnCommits } from './own-commits.js';
import { startHealthServer } from './health-server.js';
import { HeapRelease } from './heap-release.js';
import { createLogger } from './logger.js';
import { ServiceMetrics } from './metrics.js';
import { loadServiceConfig, type ServiceConfig, type ServiceDefaults } from './service-config.js';
import { startServiceTracing } from './service-tracing.js';
import { InterruptRegistry } from './signals.js';

export type ServiceContext = {
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly metrics: ServiceMetrics;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly log: EventLog;
  readonly interrupts: InterruptRegistry;
  /** Runs `call` again while NATS is transiently unavailable (a leader election, a node restarting), then fails. */
  untilAvailable<T>(what: string, call: () => Promise<T>): Promise<T>;
  /**
   * The live instance of this service's group that owns `partition` (libs/bus partitionOwners):
   * undefined until the group's members are heard, and for a group not partitioned.
   */
  partitionOwner(partition: number): string | undefined;
};

export type ServiceParts = {
  /** Handles the group's commits; omit for a service that consumes nothing. */
  readonly handler?: CommitHandler;
  /** Extra readiness condition. */
  readonly ready?: () => Promise<boolean>;
  /** Release what `start` acquired (after in-flight commits were handed back). */
  readonly stop?: () => Promise<void>;
};

export type ServiceDefinition = {
  readonly service: string;
  /** The durable consumer shared by all instances (defaults to the service name). */
  readonly consumer?: string;
  readonly defaults?: ServiceDefaults;
  /** Create the events stream when it is missing (default true); a service whose credential only reads waits for it instead. */
  readonly createsStream?: boolean;
  /**
   * Pull from a queue of the service's own instead of the events stream (the condenser's
   * wake-ups): its stream, the prefix its subjects name conversations under
   * (`<prefix>.<tenant>.<conversation>`), and how to create it when missing.
   */
  readonly queue?: ServiceQueue;
  /** The handler keeps a conversation's commits in order itself: they are handed to it without waiting for the previous one (CommitConsumerOptions). */
  readonly concurrentPerConversation?: boolean;
  start(context: ServiceContext): Promise<ServiceParts>;
};

export type ServiceQueue = {
  readonly stream: string;
  readonly subjectPrefix: string;
  ensure(jsm: JetStreamManager, config: ServiceConfig): Promise<void>;
};

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A service process: config from the environment, pino logs, NATS (reconnecting forever), the
 * events stream, the group's durable consumer, /health /ready /metrics, and a graceful stop on
 * SIGTERM/SIGINT that hands in-flight commits back to the group at once.
 */
export async function runService(definition: ServiceDefinition): Promise<void> {
  // the allocator preloaded for this process (if any) is not for the commands it runs
  const allocator = adoptAllocator();
  const config = loadServiceConfig(definition.service, process.env, definition.defaults);
  const logger = createLogger(config);
  const tracing = await startServiceTracing(config, logger);
  const metrics = new ServiceMetrics(definition.service);
  // compiled before the first commit arrives, not while it waits
  prepareValidation();
  const nc = await connectWithRetry(config, logger);
  // acks of handled commits ride along with the next append's write
  const acks = new AckBatch(config.ackHoldMs);
  // a group not delivered its own commits carries on after them itself (libs/bus SELF_CONTINUING)
  const ownCommits =
    SELF_CONTINUING[definition.consumer ?? definition.service] !== undefined ? new OwnCommits() : undefined;
  const log = await openLogWithRetry(
    nc,
    config,
    logger,
    {
      beforePublish: () => acks.flush(),
      ...(ownCommits ? { onAppended: (ref, message) => ownCommits.appended(ref, message) } : {}),
    },
    definition.createsStream ?? true,
  );
  // start-up outlives a leader election or a node's restart in a cluster (transient failures are waited out, then it fails)
  const untilAvailable = <T>(what: string, call: () => Promise<T>): Promise<T> =>
    whileUnavailable(call, {
      onRetry: (error, attempt, waitMs) =>
        logger.warn({ err: error, attempt, waitMs }, `${what}: NATS is not available yet; retrying`),
    });
  const jsm = await untilAvailable('JetStream', () => jetstreamManager(nc));
  await reportStorage(jsm, config, logger, nc);
  const js = jetstream(nc);
  const interrupts = new InterruptRegistry();
  interrupts.listen(nc, undefined, (error) =>
    logger.error({ err: error }, 'interrupts cannot be followed: in-flight work will not be cancelled by an interrupt'),
  );
  let members: GroupMembers | undefined;
  /** Each partition's owner among the members last heard (ranked once per change of members). */
  let owners: { readonly among: readonly string[]; readonly owners: readonly string[] } | undefined;
  const partitionOwner = (partition: number): string | undefined => {
    const live = members?.members;
    if (live === undefined) return undefined;
    if (owners?.among !== live) owners = { among: live, owners: partitionOwners(live) };
    return owners.owners[partition];
  };
  const context: ServiceContext = {
    config,
    logger,
    metrics,
    nc,
    js,
    jsm,
    log,
    interrupts,
    untilAvailable,
    partitionOwner,
  };
  const parts = await definition.start(context);

  let consumer: CommitConsumer | undefined;
  /**
   * When the pulls this instance made before a sibling joined (at its old priorities) are all
   * gone: it is first ready only then, so that what starts at once meets every instance's
   * partitions where they are ranked (a tool runner's first action there claims the workspace).
   */
  let rankedPullsFrom = 0;
  let rankedOnce = false;
  let heapRelease: HeapRelease | undefined;
  const handler = parts.handler;
  if (handler) {
    heapRelease = new HeapRelease({
      after: config.heapReleaseAfter,
      onRelease: ({ ms, heapBefore, heapAfter }) => {
        metrics.heapReleases.inc();
        logger.debug(
          {
            ms: Math.round(ms),
            heapBeforeMiB: Math.round(heapBefore / 2 ** 20),
            heapAfterMiB: Math.round(heapAfter / 2 ** 20),
          },
          'quiet after a burst: heap given back',
        );
      },
    });
    const name = definition.consumer ?? definition.service;
    const { queue } = definition;
    if (queue) await untilAvailable(`the ${queue.stream} stream`, () => queue.ensure(jsm, config));
    const source = queue ?? { stream: log.streamName, subjectPrefix: log.subjectPrefix };
    const consumerSpec = {
      stream: source.stream,
      ackWaitMs: config.ackWaitMs,
      maxAckPending: Math.max(config.concurrency * 4, 256, config.concurrency + config.lookahead),
    };
    // a group that takes conversations by partition ranks its instances among the live ones
    if (!queue && PARTITIONED_GROUPS.includes(name))
      members = await GroupMembers.join({
        nc,
        group: name,
        instanceId: config.instanceId,
        onChange: (live) => {
          logger.info({ members: live }, 'the group changed: partitions ranked among its live instances');
          if (!consumer) return;
          consumer.prioritize(partitionPriorities(config.instanceId, live));
          rankedPullsFrom = Date.now() + PARTITION_PULL_EXPIRES_MS;
        },
        onInvalid: (reason) => logger.warn({ reason }, 'an announcement on the members subject is not one: ignored'),
        onError: (error) => logger.error({ err: error }, "cannot follow the group's members: ranking partitions alone"),
      });
    const rankedAmong = members?.members;
    // the events stream: the kinds the group can be owed work by, through its partitions' consumers
    // too where it has them (libs/bus groupConsumers); a queue of its own: all of it
    const partitions = await untilAvailable(`the ${name} consumers`, async (): Promise<PartitionPull[]> => {
      if (!queue)
        return ensureGroupConsumers(jsm, {
          ...consumerSpec,
          group: name,
          subjectPrefix: source.subjectPrefix,
          instanceId: config.instanceId,
          ...(rankedAmong ? { members: rankedAmong } : {}),
        });
      await ensureDurableConsumer(jsm, { ...consumerSpec, name, filterSubjects: [`${source.subjectPrefix}.>`] });
      return [];
    });
    consumer = await untilAvailable(`the ${name} consumer`, () =>
      startCommitConsumer({
        js,
        stream: source.stream,
        consumer: name,
        partitions,
        subjectPrefix: source.subjectPrefix,
        concurrency: config.concurrency,
        // a batched pull (the projector) pulls for its free slots only
        ...(config.lookahead > 0 && config.pullIntervalMs === 0
          ? {
              fairness: {
                lookahead: config.lookahead,
                lookaheadBytes: config.lookaheadBytes,
                reserve: config.fairReserve,
              },
            }
          : {}),
        ackWaitMs: config.ackWaitMs,
        handler,
        logger,
        metrics,
        heapRelease,
        acks,
        ...(config.pullIntervalMs > 0 ? { batched: { nc, intervalMs: config.pullIntervalMs } } : {}),
        ...(definition.concurrentPerConversation ? { concurrentPerConversation: true } : {}),
        ...(ownCommits && !queue ? { ownCommits } : {}),
      }),
    );
    // the members that came and went while the consumers were made (their first pulls went out at the ranks before)
    if (members && members.members !== rankedAmong) {
      consumer.prioritize(partitionPriorities(config.instanceId, members.members));
      rankedPullsFrom = Date.now() + PARTITION_PULL_EXPIRES_MS;
    }
    heapRelease.idle(consumer.inFlight());
  }
  const health = await startHealthServer(
    config.healthPort,
    {
      ready: async () =>
        !nc.isClosed() &&
        nc.info !== undefined &&
        (await log.jsm.streams.info(log.streamName).then(
          () => true,
          () => false,
        )) &&
        (rankedOnce || (rankedOnce = Date.now() >= rankedPullsFrom)) &&
        ((await parts.ready?.()) ?? true),
    },
    metrics,
    config.healthHost,
  );
  logger.info(
    { health: health.url, nats: describeBus(config.bus), stream: log.streamName, allocator },
    `${definition.service} ready`,
  );

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, inFlight: consumer?.inFlight() ?? 0 }, 'stopping: handing in-flight commits back');
    // its siblings rank themselves without it at once, while its pulls are still there to hand over from
    members?.leave();
    await consumer?.stop();
    heapRelease?.close();
    await parts.stop?.();
    interrupts.close();
    await health[Symbol.asyncDispose]();
    await nc.drain().catch(() => undefined);
    await tracing
      ?.shutdown()
      .catch((error: unknown) => logger.warn({ err: error }, 'the last spans could not be exported'));
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/**
 * Connects as the service's own NATS user (its inbox prefix named after the service), retrying
 * while the server is unreachable. A refused credential is not retried: it will not get better.
 * A server Flotilla cannot run on (older than the minimum version, or without JetStream) stops
 * the process with exit code 1 and one log line saying what to do (connectBus).
 */
export async function connectWithRetry(config: ServiceConfig, logger: Logger): Promise<NatsConnection> {
  for (const warning of config.bus.warnings) logger.warn(warning);
  const bus = describeBus(config.bus);
  for (let attempt = 1; ; attempt += 1) {
    try {
      // noAsyncTraces: no Error (with a captured stack) per request just in case it times out; that
      // eager capture was a large share of every service's CPU under load (see tests/bench/throughput).
      return await connectBus(
        config.bus,
        { name: config.instanceId, identity: config.service },
        { maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 5_000, noAsyncTraces: true },
      );
    } catch (error) {
      if (error instanceof UnsupportedServerError) {
        logger.fatal({ code: error.code, nats: bus }, error.message);
        process.exit(1);
      }
      if (isAuthenticationFailure(error)) {
        throw new Error(
          `NATS at ${bus.servers.join(', ')} refused ${bus.auth}: check FLOTILLA_NATS_USER and its password, or the nkey or .creds file (${(error as Error).message})`,
          { cause: error },
        );
      }
      logger.warn({ err: error, attempt, nats: bus }, 'NATS is not reachable yet; retrying');
      await delay(Math.min(5_000, 200 * attempt));
    }
  }
}

function isAuthenticationFailure(error: unknown): boolean {
  const text =
    `${(error as Error).name} ${(error as Error).message} ${String((error as { cause?: unknown }).cause ?? '')}`.toLowerCase();
  return (
    text.includes('authorization violation') ||
    text.includes('authentication') ||
    text.includes('user authentication expired')
  );
}

/** Warns, once at start, of storage that differs from the configuration (it is not changed: that takes the admin credential). */
async function reportStorage(
  jsm: JetStreamManager,
  config: ServiceConfig,
  logger: Logger,
  nc: NatsConnection,
): Promise<void> {
  const warnings = await checkBucketStorage(jsm, config.service, config.storage, nc.info).catch((error: unknown) => [
    `could not compare the buckets' settings: ${(error as Error).message}`,
  ]);
  for (const warning of warnings) logger.warn(warning);
}

export async function openLogWithRetry(
  nc: NatsConnection,
  config: ServiceConfig,
  logger: Logger,
  hooks: Pick<EventLogOptions, 'beforePublish' | 'onAppended'> = {},
  createIfMissing = true,
): Promise<EventLog> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const log = await EventLog.open(nc, {
        streamName: config.streamName,
        subjectPrefix: config.subjectPrefix,
        replicas: config.storage.replicas,
        maxAgeMs: config.storage.streamMaxAgeMs,
        maxBytes: config.storage.streamMaxBytes,
        createIfMissing,
        // its commits' kind (libs/bus WRITER_KINDS), which its NATS user may publish
        writer: config.service,
        ...hooks,
      });
      if (log.storageWarning) logger.warn(log.storageWarning);
      return log;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'stream_misconfigured') throw error;
      logger.warn({ err: error, attempt }, 'the events stream is not available yet; retrying');
      await delay(Math.min(5_000, 200 * attempt));
    }
  }
}
