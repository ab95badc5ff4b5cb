import { jetstream } from '@nats-io/jetstream';
import { FLOTILLA_VERSION } from '@flotilla/api';
import { describeBus } from '@flotilla/bus';
import { createBuiltinTools } from '@flotilla/tools';
import {
  adoptAllocator,
  connectWithRetry,
  createLogger,
  ensureDeletionNotices,
  ImageStore,
  loadServiceConfig,
  loadTenantBudgets,
  TenantUsageStore,
  openLogWithRetry,
  publishDeletion,
  RunnerRegistry,
  startServiceTracing,
} from '@flotilla/runtime';
import { loadSecretsKey, SecretWriter } from '@flotilla/secrets';
import { SnapshotStore } from '@flotilla/state';
import { ScheduleStore } from '@flotilla/schedules';
import { DeadLetterStore, WebhookRegistry } from '@flotilla/webhooks';
import { loadAgentCatalog } from '@flotilla/workers';
import { taskToolSpec } from '@flotilla/agent';
import { ApiKeyStore } from './api-keys.js';
import { buildGateway } from './app.js';
import { loadGatewayConfig } from './config.js';
import { ConversationIndex } from './conversation-index.js';
import { RunQueue } from './run-queue.js';

const allocator = adoptAllocator();
const service = loadServiceConfig('gateway');
const config = loadGatewayConfig();
const logger = createLogger(service);
const tracing = await startServiceTracing(service, logger);
// a malformed key or an unreadable key file stops the gateway here, naming the variable
const secretsKey = loadSecretsKey();
const nc = await connectWithRetry(service, logger);
const log = await openLogWithRetry(nc, service, logger);
const { replicas } = service.storage;
const snapshots = await SnapshotStore.open(nc, { replicas });
const keys = await ApiKeyStore.open(nc, { replicas });
const secrets = secretsKey ? await SecretWriter.open(nc, { key: secretsKey, replicas }) : undefined;
if (!secrets)
  logger.warn(
    'secrets are off: set FLOTILLA_SECRETS_KEY_FILE (a file holding `openssl rand -base64 32`) to let users set secrets',
  );
// webhooks' signing secrets are stored encrypted with the same key; the webhooks service makes the dead letters' bucket
const webhooks = secretsKey
  ? {
      registry: await WebhookRegistry.open(nc, { key: secretsKey, replicas }),
      deadLetters: await DeadLetterStore.bind(nc),
    }
  : undefined;
// schedules live on nats-server's message scheduler (2.14+): on an older server their routes answer 503
const schedules = await ScheduleStore.open(nc, {
  replicas,
  onCorrupt: (key) => logger.error({ key }, 'a stored schedule does not parse: left out'),
}).catch((error: unknown) => {
  logger.warn(
    { err: error },
    'schedules are off: their stream could not be made (they need nats-server 2.14 or newer)',
  );
  return undefined;
});
for (const { tenant, key } of config.bootstrapKeys) await keys.put(key, tenant, 'bootstrap');
const runners = await RunnerRegistry.open(nc, { replicas, livenessMs: service.runnerLivenessMs });
// the images of user messages: stored here, read by the step workers
const images = await ImageStore.open(nc, { replicas });
// the notices of deleted conversations, for the PostgreSQL sink
await ensureDeletionNotices(log.jsm, replicas);
const deletionsJs = jetstream(nc);
const index = new ConversationIndex(snapshots.kv, logger);
await index.start();
// the tenants' budgets (the step workers' setting too): the operator's usage route reads what the step workers counted
const budgets = loadTenantBudgets();
const usage = budgets ? { store: await TenantUsageStore.open(nc, { replicas }), budgets } : undefined;
// runs past a tenant's limit wait in order, in a queue every gateway shares
const runQueue = config.maxRunningPerTenant > 0 ? await RunQueue.open(nc, logger, { replicas }) : undefined;
await runQueue?.start();
// the operator's agents: each conversation's spec is made from them (a bad catalog stops the gateway here, naming the variable)
const catalog = loadAgentCatalog();
// the built-in tools and the task tool (whose calls start sub-agents), each described by its first line
const builtins = new Map(
  [...createBuiltinTools(), taskToolSpec([])].map((tool) => [tool.name, tool.description.split('\n')[0] ?? '']),
);
const tools = catalog.tools().map((name) => ({ name, description: builtins.get(name) ?? '' }));

const gateway = await buildGateway(
  {
    nc,
    log,
    snapshots,
    index,
    keys,
    logger,
    instance: service.instanceId,
    version: FLOTILLA_VERSION,
    tools,
    catalog,
    runners,
    images,
    ...(secrets ? { secrets } : {}),
    ...(webhooks ? { webhooks } : {}),
    ...(schedules ? { schedules } : {}),
    ...(runQueue ? { runQueue } : {}),
    ...(usage ? { usage } : {}),
    deletions: (notice) => publishDeletion(deletionsJs, notice),
  },
  config,
);
const address = await gateway.app.listen({ host: config.host, port: config.port });
logger.info(
  {
    url: address,
    nats: describeBus(service.bus),
    keys: config.bootstrapKeys.length,
    secrets: secrets !== undefined,
    allocator,
  },
  'gateway ready',
);

let stopping = false;
const stop = async (signal: string): Promise<void> => {
  if (stopping) return;
  stopping = true;
  logger.info({ signal, sockets: gateway.hub.sockets }, 'stopping: closing sockets (clients resume elsewhere)');
  await gateway.close();
  index.stop();
  runQueue?.stop();
  await nc.drain().catch(() => undefined);
  await tracing
    ?.shutdown()
    .catch((error: unknown) => logger.warn({ err: error }, 'the last spans could not be exported'));
  logger.info('stopped');
  process.exit(0);
};
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
