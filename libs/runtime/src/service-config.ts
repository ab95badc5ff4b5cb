import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { loadBusSettings, loadStorageSettings, type BusSettings, type StorageSettings } from '@flotilla/bus';
import { z } from 'zod';

/** Settings every service reads from its environment. */
export const ServiceConfig = z.object({
  service: z.string().min(1),
  /** Unique per process: a restarted process is a new instance (its predecessor is dead). */
  instanceId: z.string().min(1),
  streamName: z.string().regex(/^[A-Za-z0-9_-]+$/),
  subjectPrefix: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/),
  home: z.string().min(1),
  /** Port of the health/readiness/metrics endpoint; 0 picks a free one. */
  healthPort: z.coerce.number().int().min(0).max(65_535),
  /** Commits handled at once by this process. */
  concurrency: z.coerce.number().int().min(1).max(10_000),
  /**
   * Commits held beyond the free slots, served fairly across tenants (docs/architecture.md,
   * "Tenant fairness"), at most this many and this many bytes; 0 holds none (delivery order).
   */
  lookahead: z.coerce.number().int().min(0).max(100_000),
  lookaheadBytes: z.coerce.number().int().min(0),
  /** Free slots kept for tenants under their share while several are active (below the concurrency). */
  fairReserve: z.coerce.number().int().min(0),
  /** How long a delivered commit may go unacknowledged before redelivery. */
  ackWaitMs: z.coerce.number().int().min(1_000),
  /** How long a handled commit's ack may wait to share a write with the next append (see AckBatch); 0 sends it at the end of the turn. */
  ackHoldMs: z.coerce.number().int().min(0).max(1_000),
  /**
   * 0: a standing pull, each commit delivered the moment it lands (the step worker, the tool
   * runner). More: the commits that landed meanwhile pulled in one batch at most this often
   * (BatchedPull), for groups that need not react at once (the projector).
   */
  pullIntervalMs: z.coerce.number().int().min(0).max(1_000),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
  /** Commits handled before the next quiet period gives the heap back (see HeapRelease); 0 disables. */
  heapReleaseAfter: z.coerce.number().int().min(0),
  /** Where the health endpoint listens (0.0.0.0 in Kubernetes). */
  healthHost: z.string().min(1),
  /** A tool runner whose heartbeat is older than this is dead (its workspaces are taken over). */
  runnerLivenessMs: z.coerce.number().int().min(1_000).max(600_000),
  /** Tool runner: the workspaces' root. */
  workspaces: z.string().min(1),
  /**
   * Step workers, tool runners, the delegator: the events of the conversations they work on, kept in
   * memory between commits, at most this many in all (a measure of memory: the least recently used
   * conversations go first), and at most `cacheConversations` conversations (a safety bound far
   * above the live conversations an instance serves, so a cache never thrashes by count).
   */
  cacheEvents: z.coerce.number().int().min(1_000).max(100_000_000),
  cacheConversations: z.coerce.number().int().min(1).max(1_000_000),
  /** Step worker: a conversation waiting longer than this for a condensation is logged once. */
  condensationWarnMs: z.coerce.number().int().min(1_000),
  /** Projector: how long a conversation's newest commit waits for the next before its snapshot is written. */
  projectorSettleMs: z.coerce.number().int().min(0).max(10_000),
  /**
   * OTLP/HTTP collector base URL: traces on, spans POSTed to `<it>/v1/traces` (OpenTelemetry's own
   * variable). Unset: tracing off, no SDK loaded (docs/operations.md, "Traces").
   */
  otlpEndpoint: z
    .string()
    .trim()
    .refine(
      isOtlpEndpoint,
      'must be an http(s) URL such as http://otel-collector:4318, without credentials, query or fragment',
    )
    .optional(),
});
export type ServiceConfig = z.infer<typeof ServiceConfig> & {
  /** How to reach NATS and as whom (FLOTILLA_NATS_*). */
  readonly bus: BusSettings;
  /** Replicas and retention of the stream and buckets (FLOTILLA_REPLICAS, FLOTILLA_STREAM_MAX_*). */
  readonly storage: StorageSettings;
};

/** A service's own defaults for settings its environment does not give. */
export type ServiceDefaults = {
  readonly concurrency?: number;
  readonly pullIntervalMs?: number;
  readonly lookahead?: number;
};

const VARIABLES: Record<string, string> = {
  streamName: 'FLOTILLA_STREAM',
  subjectPrefix: 'FLOTILLA_SUBJECT_PREFIX',
  home: 'FLOTILLA_HOME',
  healthPort: 'FLOTILLA_HEALTH_PORT',
  concurrency: 'FLOTILLA_CONCURRENCY',
  lookahead: 'FLOTILLA_LOOKAHEAD',
  lookaheadBytes: 'FLOTILLA_LOOKAHEAD_BYTES',
  fairReserve: 'FLOTILLA_FAIR_RESERVE',
  ackWaitMs: 'FLOTILLA_ACK_WAIT_MS',
  ackHoldMs: 'FLOTILLA_ACK_HOLD_MS',
  pullIntervalMs: 'FLOTILLA_PULL_INTERVAL_MS',
  logLevel: 'FLOTILLA_LOG_LEVEL',
  instanceId: 'FLOTILLA_INSTANCE_ID',
  heapReleaseAfter: 'FLOTILLA_HEAP_RELEASE_AFTER',
  healthHost: 'FLOTILLA_HEALTH_HOST',
  runnerLivenessMs: 'FLOTILLA_RUNNER_LIVENESS_MS',
  workspaces: 'FLOTILLA_WORKSPACES',
  cacheEvents: 'FLOTILLA_CACHE_EVENTS',
  cacheConversations: 'FLOTILLA_CACHE_CONVERSATIONS',
  condensationWarnMs: 'FLOTILLA_CONDENSATION_WARN_MS',
  projectorSettleMs: 'FLOTILLA_PROJECTOR_SETTLE_MS',
  otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
};

/** Reads the service config from the environment and fails fast naming the bad variable. */
export function loadServiceConfig(
  service: string,
  environment: NodeJS.ProcessEnv = process.env,
  defaults: ServiceDefaults = {},
): ServiceConfig {
  const home = resolve(environment['FLOTILLA_HOME'] ?? '.flotilla');
  const concurrency = Number(environment['FLOTILLA_CONCURRENCY'] ?? defaults.concurrency ?? 64);
  const lookahead = environment['FLOTILLA_LOOKAHEAD'] ?? defaults.lookahead ?? 0;
  const result = ServiceConfig.safeParse({
    service,
    instanceId: environment['FLOTILLA_INSTANCE_ID'] || `${service}-${randomUUID().slice(0, 8)}`,
    streamName: environment['FLOTILLA_STREAM'] ?? 'FLOTILLA_EVENTS',
    subjectPrefix: environment['FLOTILLA_SUBJECT_PREFIX'] ?? 'flotilla.ev',
    home,
    healthPort: environment['FLOTILLA_HEALTH_PORT'] ?? 0,
    concurrency: environment['FLOTILLA_CONCURRENCY'] ?? defaults.concurrency ?? 64,
    lookahead,
    lookaheadBytes: environment['FLOTILLA_LOOKAHEAD_BYTES'] ?? 64 * 2 ** 20,
    // a tenth of the slots, with a lookahead (without one, nothing waits here to be served fairly)
    fairReserve:
      environment['FLOTILLA_FAIR_RESERVE'] ??
      (Number(lookahead) > 0 && Number.isInteger(concurrency) ? Math.floor(concurrency / 10) : 0),
    ackWaitMs: environment['FLOTILLA_ACK_WAIT_MS'] ?? 30_000,
    ackHoldMs: environment['FLOTILLA_ACK_HOLD_MS'] ?? 20,
    pullIntervalMs: environment['FLOTILLA_PULL_INTERVAL_MS'] ?? defaults.pullIntervalMs ?? 0,
    logLevel: environment['FLOTILLA_LOG_LEVEL'] ?? 'info',
    heapReleaseAfter: environment['FLOTILLA_HEAP_RELEASE_AFTER'] ?? 1_000,
    healthHost: environment['FLOTILLA_HEALTH_HOST'] || '127.0.0.1',
    runnerLivenessMs: environment['FLOTILLA_RUNNER_LIVENESS_MS'] ?? 10_000,
    workspaces: resolve(environment['FLOTILLA_WORKSPACES'] || join(home, 'workspaces')),
    cacheEvents: environment['FLOTILLA_CACHE_EVENTS'] ?? 500_000,
    cacheConversations: environment['FLOTILLA_CACHE_CONVERSATIONS'] ?? 100_000,
    condensationWarnMs: environment['FLOTILLA_CONDENSATION_WARN_MS'] ?? 60_000,
    // longer than a step's hops from its actions to their results when the cores are busy
    // (docs/benchmarks.md, throughput), so that a step costs one snapshot write
    projectorSettleMs: environment['FLOTILLA_PROJECTOR_SETTLE_MS'] ?? 100,
    otlpEndpoint: environment['OTEL_EXPORTER_OTLP_ENDPOINT'] || undefined,
  });
  if (result.success && result.data.fairReserve >= result.data.concurrency) {
    throw new Error(
      `invalid ${service} configuration: FLOTILLA_FAIR_RESERVE: must be below FLOTILLA_CONCURRENCY (${result.data.concurrency}), not ${result.data.fairReserve}`,
    );
  }
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${VARIABLES[String(issue.path[0])] ?? issue.path.join('.')}: ${issue.message}`,
    );
    throw new Error(`invalid ${service} configuration: ${problems.join('; ')}`);
  }
  // each throws naming its variable
  return { ...result.data, bus: loadBusSettings(environment), storage: loadStorageSettings(environment) };
}

function isOtlpEndpoint(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.username === '' &&
      url.password === '' &&
      url.search === '' &&
      url.hash === ''
    );
  } catch {
    return false;
  }
}
