import { FLOTILLA_VERSION } from '@flotilla/api';
import { AgentCatalog, parseAgentConfig } from '@flotilla/agent';
import { FlotillaClient } from '@flotilla/client';
import { NodeWebSocket } from '@flotilla/client/node';
import { draftEvent, type EventDraft } from '@flotilla/events';
import { appendWithRetry, EventLog, type ConversationRef, type StoredCommit } from '@flotilla/log';
import { SecretReader, SecretWriter } from '@flotilla/secrets';
import { ImageStore, servePurges } from '@flotilla/runtime';
import { SnapshotStore } from '@flotilla/state';
import { ScheduleStore } from '@flotilla/schedules';
import { DeadLetterStore, WebhookRegistry } from '@flotilla/webhooks';
import { startNats, type NatsTestServer } from '@flotilla/testing';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { pino, type DestinationStream } from 'pino';
import { ApiKeyStore } from '../api-keys.js';
import { buildGateway, type Gateway } from '../app.js';
import { DEFAULT_GATEWAY_CONFIG, type GatewayConfig } from '../config.js';
import { ConversationIndex } from '../conversation-index.js';

export const ACME_KEY = 'harness-key-acme-0123456789';
export const GLOBEX_KEY = 'harness-key-globex-0123456789';
export const ADMIN_KEY = 'harness-admin-key-0123456789';

export type GatewayHarness = AsyncDisposable & {
  readonly nats: NatsTestServer;
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly gateway: Gateway;
  readonly url: string;
  readonly config: GatewayConfig;
  /** The gateway's side of the secrets (undefined when started without a key). */
  readonly secrets: SecretWriter | undefined;
  /** The tool runner's side, to see what a sandbox would get (undefined when started without a key). */
  readonly secretReader: SecretReader | undefined;
  /** The images bucket the gateway stores messages' images in (read here as a step worker would). */
  readonly images: ImageStore;
  /** The schedules' stream and bucket the gateway keeps (and takes the runs of). */
  readonly schedules: ScheduleStore;
  /** Tenant `acme`'s client, and tenant `globex`'s. */
  readonly acme: FlotillaClient;
  readonly globex: FlotillaClient;
  client(apiKey: string): FlotillaClient;
  /** Append events straight to the log (as a worker would). */
  append(ref: ConversationRef, drafts: (ref: ConversationRef) => readonly EventDraft[]): Promise<StoredCommit | null>;
  /** Append `count` agent messages, one commit each. */
  produce(ref: ConversationRef, count: number, text?: string): Promise<void>;
};

export type HarnessOptions = {
  /** The secrets key; null starts the gateway without one (secrets routes answer 503). Default: a random key. */
  readonly secretsKey?: Buffer | null;
  /** Where the gateway's pino logger writes, at level trace (default: silent, or info with FLOTILLA_TEST_LOGS). */
  readonly logDestination?: DestinationStream;
  /** The operator's agents (default: one model, `harness-model`, with the default tools, and no catalog). */
  readonly catalog?: AgentCatalog;
};

/** Events a conversation is created with, before any message: its state and its agent spec. */
export const CREATED_EVENTS = 2;

/** The harness's default spec: the default agent settings on a model no test calls. */
export const HARNESS_AGENT = parseAgentConfig({ llm: { provider: 'openai-chat', model: 'harness-model' } });

/**
 * A gateway in this process on a real nats-server (no agent services): REST and sockets work;
 * commands append, but nothing steps. For whole-system tests use tests/support/system.ts.
 */
export async function startGatewayHarness(
  overrides: Partial<GatewayConfig> = {},
  options: HarnessOptions = {},
): Promise<GatewayHarness> {
  const nats = await startNats({ preferExternal: false });
  const nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const log = await EventLog.open(nc);
  const snapshots = await SnapshotStore.open(nc);
  const keys = await ApiKeyStore.open(nc, { cacheMs: 1_000 });
  await keys.put(ACME_KEY, 'acme', 'harness');
  await keys.put(GLOBEX_KEY, 'globex', 'harness');
  const logger = options.logDestination
    ? pino({ level: 'trace' }, options.logDestination)
    : pino({ level: process.env['FLOTILLA_TEST_LOGS'] ? 'info' : 'silent' });
  const secretsKey = options.secretsKey === undefined ? randomBytes(32) : options.secretsKey;
  const secrets = secretsKey === null ? undefined : await SecretWriter.open(nc, { key: secretsKey });
  const secretReader = secretsKey === null ? undefined : await SecretReader.open(nc, { key: secretsKey });
  // webhooks' signing secrets are encrypted with the same key
  const webhooks =
    secretsKey === null
      ? undefined
      : { registry: await WebhookRegistry.open(nc, { key: secretsKey }), deadLetters: await DeadLetterStore.bind(nc) };
  const index = new ConversationIndex(snapshots.kv, logger);
  await index.start();
  // the projector's part of a delete (removing the conversation's log)
  servePurges(nc, log, logger);
  const images = await ImageStore.open(nc);
  const schedules = await ScheduleStore.open(nc);
  const config: GatewayConfig = { ...DEFAULT_GATEWAY_CONFIG, port: 0, adminKey: ADMIN_KEY, webUi: false, ...overrides };
  const gateway = await buildGateway(
    {
      nc,
      log,
      snapshots,
      index,
      keys,
      images,
      logger,
      instance: 'harness',
      version: FLOTILLA_VERSION,
      tools: [{ name: 'terminal', description: 'shell' }],
      catalog: options.catalog ?? new AgentCatalog(HARNESS_AGENT),
      ...(secrets ? { secrets } : {}),
      ...(webhooks ? { webhooks } : {}),
      schedules,
    },
    config,
  );
  const url = await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const client = (apiKey: string): FlotillaClient =>
    new FlotillaClient({ baseUrl: url, apiKey, WebSocket: NodeWebSocket });
  const append = (
    ref: ConversationRef,
    drafts: (ref: ConversationRef) => readonly EventDraft[],
  ): Promise<StoredCommit | null> => appendWithRetry(log, ref, () => drafts(ref));
  return {
    nats,
    nc,
    log,
    gateway,
    url,
    config,
    secrets,
    secretReader,
    images,
    schedules,
    acme: client(ACME_KEY),
    globex: client(GLOBEX_KEY),
    client,
    append,
    async produce(ref, count, text = 'tick') {
      for (let index = 0; index < count; index += 1) {
        await append(ref, (r) => [
          draftEvent({ ...r, source: 'agent' }, 'message', {
            role: 'assistant',
            content: [{ type: 'text', text: `${text} ${index}` }],
          }),
        ]);
      }
    },
    async [Symbol.asyncDispose]() {
      await gateway.close();
      index.stop();
      await nc.close().catch(() => undefined);
      await nats[Symbol.asyncDispose]();
    },
  };
}
