import type { AgentCatalog } from '@flotilla/agent';
import type { EventLog } from '@flotilla/log';
import type { DeletionNotice, RunnerRegistry, TenantBudgets, TenantUsageStore } from '@flotilla/runtime';
import type { ScheduleStore } from '@flotilla/schedules';
import type { SecretWriter } from '@flotilla/secrets';
import type { SnapshotStore } from '@flotilla/state';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { ApiKeyStore } from './api-keys.js';
import type { ConversationIndex } from './conversation-index.js';
import type { ImageWriter } from './message-images.js';
import type { RunQueue } from './run-queue.js';
import type { WebhookStores } from './webhook-service.js';

export type GatewayDependencies = {
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly snapshots: SnapshotStore;
  readonly index: ConversationIndex;
  readonly keys: ApiKeyStore;
  readonly logger: Logger;
  readonly instance: string;
  readonly version: string;
  /** The tools a spec may offer here (the catalog's), with what they do. */
  readonly tools: readonly { name: string; description: string }[];
  /** The operator's agents (default spec, templates, profiles, limits): every conversation's spec is made from it. */
  readonly catalog: AgentCatalog;
  /** The secrets' writing side (it never reads a value back); undefined when the gateway has no secrets key (the secrets routes answer 503). */
  readonly secrets?: SecretWriter;
  /** The tool runners: deleting a conversation removes its workspace through them; server info describes their sandboxes. */
  readonly runners?: RunnerRegistry;
  /** Where the images of user messages are stored (written, never read back); without it a message with images is answered 503. */
  readonly images?: ImageWriter;
  /** The webhooks' registrations and dead letters; undefined without a secrets key (the webhooks routes answer 503). */
  readonly webhooks?: WebhookStores;
  /** The schedules' stream and bucket; undefined on a nats-server without message schedules (the schedules routes answer 503). */
  readonly schedules?: ScheduleStore;
  /** The tenants' usage and budgets (FLOTILLA_TENANT_BUDGETS) for the operator's usage route; without it the route says nothing is counted. */
  readonly usage?: { readonly store: TenantUsageStore; readonly budgets: TenantBudgets };
  /** Where runs past the tenant's limit wait (with FLOTILLA_MAX_RUNNING_PER_TENANT); without it they are refused with 429. */
  readonly runQueue?: RunQueue;
  /** Where each deleted conversation is announced, once its log is purged (the deletion notices' queue, for the PostgreSQL sink). */
  readonly deletions?: (notice: DeletionNotice) => Promise<void>;
};
