import { WEBHOOK_DELIVERIES } from '@flotilla/bus';
import {
  ensureDurableConsumer,
  startCommitConsumer,
  type CommitConsumer,
  type ServiceContext,
  type ServiceParts,
} from '@flotilla/runtime';
import { loadSecretsKey } from '@flotilla/secrets';
import { DeadLetterStore, enqueueDelivery, ensureDeliveryQueue, WebhookDirectory } from '@flotilla/webhooks';
import { Counter, Histogram } from 'prom-client';
import { createCommitHandler } from './commit-handler.js';
import { ConversationStates } from './conversation-states.js';
import { createDeliveryHandler } from './delivery-handler.js';
import { postWebhook } from './webhook-post.js';
import { loadWebhooksConfig } from './webhooks-config.js';

/** The durable consumers of the webhooks service's instances, on the events stream and on its delivery queue (libs/bus CONSUMER_GROUPS). */
export const WEBHOOKS_GROUP = 'webhooks';

/** Deliveries with the same event within this window are stored once in the queue (a commit handled again). */
const DUPLICATE_WINDOW_MS = 10 * 60 * 1_000;

/**
 * The webhooks service's part of runService: the registrations followed in memory, the delivery
 * queue and its consumer (POSTs), the dead letters' bucket, and the handler of the log's commits
 * (which only queues deliveries). Needs the secrets key: the signing secrets are stored encrypted.
 */
export async function startWebhooks({
  config,
  logger,
  js,
  jsm,
  nc,
  log,
  metrics,
}: ServiceContext): Promise<ServiceParts> {
  const settings = loadWebhooksConfig(process.env);
  const key = loadSecretsKey();
  if (!key)
    throw new Error(
      'the webhooks service needs the secrets key (FLOTILLA_SECRETS_KEY or FLOTILLA_SECRETS_KEY_FILE), the one the gateway encrypts the signing secrets with',
    );
  const { replicas } = config.storage;
  if (settings.addresses.allowed.length > 0)
    logger.warn(
      { allowed: settings.addresses.allowed },
      'webhooks may reach these private networks (FLOTILLA_WEBHOOK_ALLOWED_NETWORKS)',
    );
  const directory = await WebhookDirectory.follow(nc, {
    key,
    replicas,
    onCorrupt: (entry) => logger.error({ key: entry }, 'a webhook registration that does not parse: ignored'),
    onWatchError: (error) => logger.warn({ err: error }, 'the watch of the webhook registrations failed; it restarts'),
  });
  const deadLetters = await DeadLetterStore.create(nc, { replicas, maxAgeMs: settings.deadLetterMaxAgeMs });
  await ensureDeliveryQueue(jsm, { replicas, duplicateWindowMs: DUPLICATE_WINDOW_MS });
  await ensureDurableConsumer(jsm, {
    stream: WEBHOOK_DELIVERIES.stream,
    name: WEBHOOKS_GROUP,
    filterSubjects: [`${WEBHOOK_DELIVERIES.subjectPrefix}.>`],
    ackWaitMs: Math.max(config.ackWaitMs, settings.timeoutMs * 2),
    maxAckPending: Math.max(settings.deliveryConcurrency * 4, 256),
  });
  const deliveryMetrics = {
    deliveries: new Counter({
      name: 'flotilla_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by outcome (delivered, retry, dead_lettered, webhook_removed, invalid)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    }),
    seconds: new Histogram({
      name: 'flotilla_webhook_delivery_seconds',
      help: 'Time of one webhook delivery attempt',
      labelNames: ['outcome'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30],
      registers: [metrics.registry],
    }),
  };
  // the queue's consumer is the runtime's commit consumer: its subjects are <prefix>.<tenant>.<webhook>, so
  // one webhook's deliveries are made one after another in this process, its retries delayed by JetStream
  const deliveries: CommitConsumer = await startCommitConsumer({
    js,
    stream: WEBHOOK_DELIVERIES.stream,
    consumer: WEBHOOKS_GROUP,
    subjectPrefix: WEBHOOK_DELIVERIES.subjectPrefix,
    concurrency: settings.deliveryConcurrency,
    ackWaitMs: Math.max(config.ackWaitMs, settings.timeoutMs * 2),
    handler: createDeliveryHandler({
      directory,
      deadLetter: (tenant, letter) => deadLetters.record(tenant, letter),
      config: settings,
      post: postWebhook,
      metrics: deliveryMetrics,
    }),
    logger: logger.child({ consumer: 'deliveries' }),
    metrics,
  });
  logger.info(
    {
      maxAttempts: settings.maxAttempts,
      retryBaseMs: settings.retryBaseMs,
      retryMaxMs: settings.retryMaxMs,
      timeoutMs: settings.timeoutMs,
    },
    'webhook deliveries started',
  );
  return {
    handler: createCommitHandler({
      directory,
      states: new ConversationStates(log),
      enqueue: (job) => enqueueDelivery(js, job),
    }),
    ready: async () => directory.loaded,
    stop: async () => {
      await deliveries.stop();
      directory.close();
    },
  };
}
