import { requestWorkspaceDeletion } from '@flotilla/runtime';
import { jetstream } from '@nats-io/jetstream';
import type { GatewayConfig } from './config.js';
import { ConversationService } from './conversation-service.js';
import type { GatewayDependencies } from './gateway-dependencies.js';
import { gatewayMetrics, type GatewayMetrics } from './gateway-metrics.js';
import { RateLimiter } from './rate-limiter.js';
import { RetentionSweeper, webhookAnnouncer, type ExpiryAnnouncer } from './retention.js';
import { RunStarter } from './run-starter.js';
import { SandboxSummary } from './sandbox-summary.js';
import { ScheduleRunner } from './schedule-runner.js';
import { ScheduleService } from './schedule-service.js';
import { SecretService } from './secret-service.js';
import { SocketHub } from './socket-hub.js';
import { WebhookService } from './webhook-service.js';

export type GatewayServices = {
  readonly conversations: ConversationService;
  readonly secrets: SecretService;
  readonly webhooks: WebhookService;
  readonly schedules: ScheduleService;
  readonly sandboxes: SandboxSummary;
  readonly hub: SocketHub;
  /** Requests (and sockets' auth frames) per API key. */
  readonly limiter: RateLimiter;
  readonly metrics: GatewayMetrics;
  /** Takes the schedules' runs once started (`start(nc)`); undefined without the schedules' stream. */
  readonly scheduleRunner: ScheduleRunner | undefined;
  /** Stops the background work started here (the sockets and the HTTP server are the caller's). */
  stop(): Promise<void>;
};

/**
 * The services behind the gateway's routes and sockets, wired from its dependencies: the
 * conversations and what deleting one also removes, secrets, webhooks, schedules, the sockets'
 * hub and the metrics; and the background work started here (retention sweeps, queued runs'
 * starter, sandboxes' summary).
 */
export async function startGatewayServices(deps: GatewayDependencies, config: GatewayConfig): Promise<GatewayServices> {
  const { log, logger } = deps;
  const conversations = new ConversationService(
    deps.nc,
    log,
    deps.snapshots,
    deps.index,
    {
      maxRunning: config.maxRunning,
      maxRunningPerTenant: config.maxRunningPerTenant,
      maxQueuedMessages: config.maxQueuedMessages,
      ...(deps.runQueue && config.maxRunningPerTenant > 0 ? { runQueue: deps.runQueue } : {}),
    },
    deps.catalog,
    deps.images,
  );
  // conversations idle past their retention are announced to their tenant's webhooks (where there are any), then deleted
  const announce: ExpiryAnnouncer = deps.webhooks
    ? webhookAnnouncer(deps.webhooks.registry, jetstream(deps.nc))
    : async () => undefined;
  const retention = new RetentionSweeper(deps.index, conversations, config.retention, announce, logger);
  retention.start(config.retentionSweepMs);
  // queued runs start here as their tenant's slots free up (on every gateway: claims decide which)
  const starter =
    deps.runQueue && config.maxRunningPerTenant > 0
      ? new RunStarter({
          queue: deps.runQueue,
          index: deps.index,
          limit: config.maxRunningPerTenant,
          start: (ref) => conversations.startQueued(ref),
          holder: deps.instance,
          logger,
        })
      : undefined;
  starter?.start();
  const secrets = new SecretService(deps.secrets, conversations, logger);
  const webhooks = new WebhookService(deps.webhooks, log, logger);
  const schedules = new ScheduleService(
    deps.schedules,
    conversations,
    deps.catalog,
    { minIntervalSeconds: config.scheduleMinIntervalSeconds },
    logger,
  );
  const runners = deps.runners;
  if (runners) {
    conversations.onDelete(async (ref, workspace) => {
      if (!(await requestWorkspaceDeletion(deps.nc, runners, ref, undefined, workspace)))
        logger.warn(
          { conversation: ref.conversation, tenant: ref.tenant },
          'no tool runner confirmed removing the workspace of a deleted conversation',
        );
    });
  }
  conversations.onDelete((ref) => secrets.removeConversationSecrets(ref));
  // the PostgreSQL sink keeps or drops its rows of a deleted conversation when it reads the notice
  if (deps.deletions) conversations.onDeleted(deps.deletions);
  const sandboxes = new SandboxSummary(runners, logger);
  await sandboxes.refresh();
  const hub = new SocketHub(deps.nc, log, logger, config.maxSubscribersPerConversation);
  const limiter = new RateLimiter(config.rateLimitPerSecond);
  const metrics = gatewayMetrics(hub);
  // every gateway takes schedules' runs (one shared consumer: each run reaches one gateway)
  const scheduleRunner = deps.schedules
    ? new ScheduleRunner(deps.schedules, conversations, logger, config.scheduleMissedRunGraceMs, (outcome) =>
        metrics.scheduleRuns.inc({ outcome }),
      )
    : undefined;

  return {
    conversations,
    secrets,
    webhooks,
    schedules,
    sandboxes,
    hub,
    limiter,
    metrics,
    scheduleRunner,
    async stop() {
      starter?.stop();
      hub.stop();
      sandboxes.stop();
      await retention.stop();
      await scheduleRunner?.stop();
    },
  };
}
