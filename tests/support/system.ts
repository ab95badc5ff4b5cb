import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  authorizationConfig,
  connectionOptions,
  ensureUsers,
  loadBusSettings,
  SERVICES,
  userEnvironment,
  type GeneratedUser,
  type Identity,
} from '@flotilla/bus';
import { draftEvent, type ConversationStatus, type Event, type EventDraft } from '@flotilla/events';
import { appendWithRetry, EventLog, type ConversationRef } from '@flotilla/log';
import { freePort, NatsCluster, NatsServerProcess } from '@flotilla/nats-embedded';
import { unmountWorkspacesUnder } from '@flotilla/sandbox';
import {
  bundleService,
  formatLogLine,
  isModelSetting,
  serviceNiceness,
  ServiceProcess,
  waitReady,
} from '@flotilla/supervisor';
import { connect, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import {
  startBrainServer,
  taskMessage,
  type BrainServer,
  type BrainTask,
  type SummaryBehaviour,
  type TitleBehaviour,
} from './brain-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IN_PROCESS_MODEL_STEP_WORKER = fileURLToPath(new URL('./in-process-model-step-worker.ts', import.meta.url));

export type SystemOptions = {
  readonly stepWorkers?: number;
  /** Give the (single) nats-server a monitoring endpoint (`natsMonitorUrl`: /varz counts every message in and out). */
  readonly natsMonitor?: boolean;
  readonly toolRunners?: number;
  readonly condensers?: number;
  readonly projectors?: number;
  /**
   * Where the step workers' model runs: `server`, the brain as an OpenAI-compatible server called
   * through the SDK over HTTP (default); `in-process`, the brain's replies in each step worker's
   * own process (no HTTP, the task's latency), for benchmarks of the runtime alone.
   */
  readonly model?: 'server' | 'in-process';
  /**
   * How long the services wait for a commit's ack before it is redelivered: the tests' 4 s
   * (default), so that a test of a lost commit does not wait the services' 30 s; or the services'
   * own, for benchmarks of the services as they ship (a step's commit is kept alive once a quarter
   * of the ack wait while its model call runs: a message per step at 1 s calls with the tests').
   */
  readonly ackWait?: 'tests' | 'services';
  readonly env?: NodeJS.ProcessEnv;
  /** Merged into the agent settings every service gets (e.g. condenser limits). */
  readonly agent?: Record<string, unknown>;
  /** The operator's agent catalog (profiles, templates, limits) the gateway and the model callers get, as FLOTILLA_AGENT_CATALOG. */
  readonly catalog?: Record<string, unknown>;
  /** Print service logs (default: only when FLOTILLA_TEST_LOGS is set). */
  readonly logs?: boolean;
  /** Gateway processes to start (default 0). Tenants: `acme` (apiKey), `globex` (otherApiKey). */
  readonly gateways?: number;
  /** Shorthand for `gateways: 1`. */
  readonly gateway?: boolean;
  /** Extra environment of the gateway processes only. */
  readonly gatewayEnv?: NodeJS.ProcessEnv;
  /** Extra environment of the tool runners only. */
  readonly toolRunnerEnv?: NodeJS.ProcessEnv;
  /** Extra environment of the step workers only. */
  readonly stepWorkerEnv?: NodeJS.ProcessEnv;
  /** Delegators to start (default 0): they start sub-agents' conversations and answer their parents. */
  readonly delegators?: number;
  /** Keep every request the model server receives (brain.requests). */
  readonly recordModelRequests?: boolean;
  /** How the model server makes its response ids (see startBrainServer). */
  readonly modelResponseIds?: 'unique' | 'recycled';
  /** How the model server answers summary requests, in order (then with summaries). */
  readonly summaries?: readonly SummaryBehaviour[];
  /** How the model server answers title requests, in order (then with titles), and how long each takes. */
  readonly titles?: readonly TitleBehaviour[];
  readonly titleLatencyMs?: number;
  /** Keep every line the services print (logLines). */
  readonly captureLogs?: boolean;
  /**
   * The test provokes permission violations on purpose. Otherwise any violation nats-server
   * reports (a service doing what its credential does not allow) fails the test at dispose.
   */
  readonly expectPermissionViolations?: boolean;
  /** nats-servers to run: 1 (default), or a JetStream cluster of this many on loopback, the stream and buckets R3. */
  readonly natsNodes?: number;
  /** PostgreSQL sink processes (default 0), writing to this database (FLOTILLA_DATABASE_URL). */
  readonly pgSinks?: number;
  readonly databaseUrl?: string;
  /** Webhooks service processes (default 0); they need FLOTILLA_SECRETS_KEY in `env`, as the gateway does for webhooks. */
  readonly webhooks?: number;
  /** Extra environment of the webhooks processes only (FLOTILLA_WEBHOOK_*). */
  readonly webhooksEnv?: NodeJS.ProcessEnv;
};

/** API keys the test gateways are provisioned with. */
export const TEST_API_KEY = 'test-key-acme-0123456789abcdef';
export const TEST_OTHER_API_KEY = 'test-key-globex-0123456789abcdef';
export const TEST_ADMIN_KEY = 'test-admin-key-0123456789abcdef';

export type RunningTestSystem = AsyncDisposable & {
  /** The nats-server (the cluster's first node with natsNodes > 1). */
  readonly nats: NatsServerProcess;
  /** The cluster, with natsNodes > 1. */
  readonly cluster: NatsCluster | undefined;
  /** What a client's `servers` option takes (every node of a cluster). */
  readonly natsUrl: string;
  /** The single nats-server's monitoring endpoint, with `natsMonitor`. */
  readonly natsMonitorUrl: string | undefined;
  /** Options to connect as one of the generated users (each service's, `admin`, `tap`); the test's own `nc` is the admin's. */
  natsOptions(identity: Identity): ConnectionOptions;
  /** The generated users, by name (each with its password and password file). */
  readonly users: ReadonlyMap<string, GeneratedUser>;
  /** The permission violations nats-server reported so far (its log lines). */
  readonly violations: readonly string[];
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly brain: BrainServer;
  readonly home: string;
  /** The file (in each conversation's workspace) every task's action appends a line to. */
  readonly effects: string;
  /** Every line of every workspace's effects file. */
  readEffects(): Promise<string[]>;
  readonly processes: readonly ServiceProcess[];
  /** Every line the services printed, when captureLogs was set. */
  readonly logLines: readonly string[];
  /** Health/metrics endpoint of each service process, by process name (e.g. `step-worker-1`). */
  readonly healthUrls: ReadonlyMap<string, string>;
  /** Base URL of the first gateway (empty without gateways), and of each. */
  readonly gatewayUrl: string;
  readonly gatewayUrls: readonly string[];
  /** Keys of tenant `acme`, tenant `globex`, and the admin key. */
  readonly apiKey: string;
  readonly otherApiKey: string;
  readonly adminKey: string;
  /** A request to the first gateway's REST API (`path` under /v1) as tenant `acme` (or with `key`): its status, its JSON body (undefined when none) and its text. */
  api(
    method: string,
    path: string,
    body?: unknown,
    key?: string,
  ): Promise<{ status: number; body: unknown; text: string }>;
  /** Appends the command's drafts (decided from the log) with optimistic concurrency. */
  command(ref: ConversationRef, decide: (events: readonly Event[]) => readonly EventDraft[]): Promise<void>;
  /** Appends `TASK …` as a user message and a run request. */
  start(ref: ConversationRef, task: Omit<BrainTask, 'effects'>): Promise<void>;
  status(ref: ConversationRef): Promise<ConversationStatus>;
  events(ref: ConversationRef): Promise<Event[]>;
  waitForStatus(
    refs: readonly ConversationRef[],
    statuses: readonly ConversationStatus[],
    timeoutMs: number,
  ): Promise<void>;
};

/** nats-server, the brain (a scripted OpenAI-compatible model) and each service as its own process. */
export async function startTestSystem(options: SystemOptions = {}): Promise<RunningTestSystem> {
  const home = await mkdtemp(join(tmpdir(), 'flotilla-system-'));
  // locked down as the launcher's embedded server: one user per service with its permissions
  const users = new Map(
    (await ensureUsers(join(home, 'nats-users'), [...SERVICES, 'admin', 'tap', { tenantTap: 'acme' }])).map((user) => [
      user.user,
      user,
    ]),
  );
  const violations: string[] = [];
  const authorization = authorizationConfig([...users.values()]);
  const watchViolations = (line: string): void => {
    if (line.includes('Violation')) violations.push(line);
  };
  const natsNodes = options.natsNodes ?? 1;
  const cluster =
    natsNodes > 1
      ? await NatsCluster.start({
          size: natsNodes,
          config: authorization,
          onLog: (_node, line) => watchViolations(line),
        })
      : undefined;
  const monitorPort = options.natsMonitor && !cluster ? await freePort() : undefined;
  const nats =
    cluster?.nodes[0] ??
    (await NatsServerProcess.start({
      storeDir: join(home, 'nats'),
      config: monitorPort === undefined ? authorization : `${authorization}\nhttp: "127.0.0.1:${monitorPort}"\n`,
      onLog: watchViolations,
    }));
  const natsUrl = cluster?.url ?? nats.url;
  const natsOptions = (identity: Identity): ConnectionOptions => {
    const user = users.get(typeof identity === 'string' ? identity : `tap-${identity.tenantTap}`);
    if (!user) throw new Error(`no test user for ${JSON.stringify(identity)}`);
    return connectionOptions(loadBusSettings({ FLOTILLA_NATS_URL: natsUrl, ...userEnvironment(user) }), {
      name: `test-${user.user}`,
      identity: user.user,
    });
  };
  const brain = await startBrainServer({
    record: options.recordModelRequests ?? false,
    ...(options.summaries ? { summaries: options.summaries } : {}),
    ...(options.titles ? { titles: options.titles } : {}),
    ...(options.titleLatencyMs !== undefined ? { titleLatencyMs: options.titleLatencyMs } : {}),
    ...(options.modelResponseIds ? { responseIds: options.modelResponseIds } : {}),
  });
  // in the workspace: the only place a sandboxed command can leave an effect
  const effects = 'effects.log';
  const agent = {
    llm: {
      provider: 'openai-chat',
      model: 'brain',
      baseURL: brain.baseURL,
      apiKey: 'test-key',
      timeoutMs: 60_000,
      retry: { maxAttempts: 4, initialDelayMs: 100, maxDelayMs: 1_000 },
    },
    tools: ['terminal', 'file_editor', 'think', 'finish'],
    prompt: { includeDate: false },
    ...options.agent,
  };
  const showLogs = options.logs ?? process.env['FLOTILLA_TEST_LOGS'] !== undefined;
  const processes: ServiceProcess[] = [];
  const logLines: string[] = [];
  const healthUrls = new Map<string, string>();
  const gatewayUrls: string[] = [];
  const spawnService = async (service: string, index: number): Promise<void> => {
    const healthPort = await freePort();
    const gatewayEnv: NodeJS.ProcessEnv =
      service === 'gateway'
        ? {
            FLOTILLA_GATEWAY_PORT: String(healthPort),
            FLOTILLA_API_KEYS: `acme:${TEST_API_KEY},globex:${TEST_OTHER_API_KEY}`,
            FLOTILLA_ADMIN_KEY: TEST_ADMIN_KEY,
            ...options.gatewayEnv,
          }
        : {};
    if (service === 'gateway') gatewayUrls.push(`http://127.0.0.1:${healthPort}`);
    const child = new ServiceProcess({
      name: `${service}-${index}`,
      entry: await serviceEntry(
        service === 'step-worker' && options.model === 'in-process'
          ? IN_PROCESS_MODEL_STEP_WORKER
          : join(ROOT, 'services', service, 'src', 'main.ts'),
      ),
      cwd: ROOT,
      ...(service === 'tool-runner' || service === 'delegator' ? { omitInherited: isModelSetting } : {}),
      // as the launcher runs them: services off the step's path at a lower CPU priority
      niceness: serviceNiceness(service),
      // FLOTILLA_TEST_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles every service process
      nodeArgs: (process.env['FLOTILLA_TEST_NODE_ARGS'] ?? '').split(' ').filter(Boolean),
      env: {
        FLOTILLA_NATS_URL: natsUrl,
        ...userEnvironment(users.get(service)!),
        ...(cluster ? { FLOTILLA_REPLICAS: '3' } : {}),
        FLOTILLA_HOME: home,
        FLOTILLA_HEALTH_PORT: String(healthPort),
        // the model's settings (and its key) go to the services that call the model, never to a tool runner
        ...(service === 'tool-runner' || service === 'pg-sink' || service === 'webhooks' || service === 'delegator'
          ? {}
          : {
              FLOTILLA_AGENT: JSON.stringify(agent),
              ...(options.catalog ? { FLOTILLA_AGENT_CATALOG: JSON.stringify(options.catalog) } : {}),
            }),
        FLOTILLA_RUNNER_LIVENESS_MS: '3000',
        ...(options.ackWait === 'services' ? {} : { FLOTILLA_ACK_WAIT_MS: '4000' }),
        FLOTILLA_LOG_LEVEL: showLogs ? 'info' : 'warn',
        ...options.env,
        ...gatewayEnv,
        ...(service === 'tool-runner' ? options.toolRunnerEnv : {}),
        ...(service === 'step-worker' ? options.stepWorkerEnv : {}),
        ...(service === 'webhooks' ? options.webhooksEnv : {}),
        ...(service === 'pg-sink' && options.databaseUrl
          ? { FLOTILLA_DATABASE_URL: options.databaseUrl, FLOTILLA_SINK_LAG_INTERVAL_MS: '200' }
          : {}),
      },
      onLine: (name, line) => {
        if (options.captureLogs) logLines.push(line);
        if (showLogs || line.includes('"level":50') || line.includes('"level":60'))
          process.stderr.write(`${formatLogLine(name, line)}\n`);
      },
    });
    child.start();
    processes.push(child);
    healthUrls.set(child.name, `http://127.0.0.1:${healthPort}`);
    await waitReady(`http://127.0.0.1:${healthPort}`, 60_000);
  };
  const counts: [string, number][] = [
    ['step-worker', options.stepWorkers ?? 1],
    ['tool-runner', options.toolRunners ?? 1],
    ['projector', options.projectors ?? 1],
    ['condenser', options.condensers ?? 0],
    ['gateway', options.gateways ?? (options.gateway ? 1 : 0)],
    ['pg-sink', options.pgSinks ?? 0],
    ['webhooks', options.webhooks ?? 0],
    ['delegator', options.delegators ?? 0],
  ];
  const started = await Promise.allSettled(
    counts.flatMap(([service, count]) => Array.from({ length: count }, (_, index) => spawnService(service, index + 1))),
  );
  const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) {
    // a service that never became ready: stop what did start, so no process outlives the test
    await Promise.allSettled(processes.map((child) => child.stop()));
    await brain.close();
    await (cluster ?? nats)[Symbol.asyncDispose]();
    await rm(home, { recursive: true, force: true });
    throw failed.reason;
  }
  const nc = await connect({ ...natsOptions('admin'), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const log = await EventLog.open(nc, cluster ? { replicas: 3 } : {});

  const events = async (ref: ConversationRef): Promise<Event[]> => (await log.readEvents(ref)).events;
  const status = async (ref: ConversationRef): Promise<ConversationStatus> => {
    const all = await events(ref);
    for (let index = all.length - 1; index >= 0; index -= 1) {
      const event = all[index]!;
      if (event.type === 'state_change' && event.status) return event.status;
    }
    return 'idle';
  };
  return {
    nats,
    cluster,
    natsUrl,
    natsMonitorUrl: monitorPort === undefined ? undefined : `http://127.0.0.1:${monitorPort}`,
    natsOptions,
    users,
    violations,
    nc,
    log,
    brain,
    home,
    effects,
    readEffects: () => readWorkspaceFiles(join(home, 'workspaces'), effects),
    processes,
    logLines,
    healthUrls,
    gatewayUrl: gatewayUrls[0] ?? '',
    gatewayUrls,
    apiKey: TEST_API_KEY,
    otherApiKey: TEST_OTHER_API_KEY,
    adminKey: TEST_ADMIN_KEY,
    async api(method, path, body, key = TEST_API_KEY) {
      const response = await fetch(`${gatewayUrls[0] ?? ''}/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      let json: unknown;
      try {
        json = text ? (JSON.parse(text) as unknown) : undefined;
      } catch {
        json = undefined;
      }
      return { status: response.status, body: json, text };
    },
    async start(ref, task) {
      await appendWithRetry(log, ref, () => [
        draftEvent({ ...ref, source: 'user' }, 'message', {
          role: 'user',
          content: [{ type: 'text', text: taskMessage({ ...task, effects }) }],
        }),
        draftEvent({ ...ref, source: 'system' }, 'state_change', { status: 'running', reason: 'test' }),
      ]);
    },
    async command(ref, decide) {
      await appendWithRetry(log, ref, async () => {
        const drafts = decide(await events(ref));
        return drafts.length > 0 ? drafts : null;
      });
    },
    status,
    events,
    async waitForStatus(refs, statuses, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const pending = new Set(refs);
      while (pending.size > 0) {
        const all = [...pending];
        for (let at = 0; at < all.length; at += 64) {
          await Promise.all(
            all.slice(at, at + 64).map(async (ref) => {
              const current = await status(ref).catch(() => undefined);
              if (current && statuses.includes(current)) pending.delete(ref);
            }),
          );
        }
        if (pending.size === 0) return;
        if (Date.now() > deadline) {
          const left = await Promise.all(
            [...pending].map(async (ref) => `${ref.conversation}=${await status(ref).catch(() => '?')}`),
          );
          throw new Error(
            `${pending.size} conversations did not reach ${statuses.join('/')} in ${timeoutMs} ms: ${left.slice(0, 10).join(', ')}`,
          );
        }
        // thousands of conversations are read less often: the reads compete with the system for the cores
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 200 + pending.size)));
      }
    },
    async [Symbol.asyncDispose]() {
      await Promise.allSettled(processes.map((child) => child.stop()));
      await nc.close().catch(() => undefined);
      await brain.close();
      await (cluster ?? nats)[Symbol.asyncDispose]();
      // workspace filesystems outlive their tool runners, as the launcher's do (it unmounts them as it stops)
      await unmountWorkspacesUnder(home);
      await rm(home, { recursive: true, force: true });
      if (violations.length > 0 && !options.expectPermissionViolations) {
        throw new Error(
          `nats-server refused ${violations.length} operations a service's credential does not allow (docs/operations.md, "Permissions"):\n${violations.slice(0, 10).join('\n')}`,
        );
      }
    },
  };
}

/**
 * Services run from their bundles, as the launcher and the image run them (bundleService);
 * FLOTILLA_TEST_FROM_SOURCE=1 runs the TypeScript under tsx instead (e.g. for profiles by file).
 */
export function serviceEntry(source: string): Promise<string> {
  return process.env['FLOTILLA_TEST_FROM_SOURCE'] === '1' ? Promise.resolve(source) : bundleService(source);
}

/** The lines of `name` in every workspace under `root` (`<tenant>/<conversation>/<name>`). */
export async function readWorkspaceFiles(root: string, name: string): Promise<string[]> {
  const lines: string[] = [];
  for (const tenant of await readdir(root).catch(() => [])) {
    for (const conversation of await readdir(join(root, tenant)).catch(() => [])) {
      const text = await readFile(join(root, tenant, conversation, name), 'utf8').catch(() => '');
      lines.push(...text.split('\n').filter((line) => line.trim() !== ''));
    }
  }
  return lines;
}
