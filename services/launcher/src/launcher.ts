import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  authorizationConfig,
  connectBus,
  CONSUMER_GROUPS,
  DEFAULT_SUBJECT_PREFIX,
  ensureUsers,
  isBusCredentialSetting,
  loadBusSettings,
  loadStorageSettings,
  removeLocalTap,
  userEnvironment,
  writeLocalTap,
  type GeneratedUser,
} from '@flotilla/bus';
import { EventLog } from '@flotilla/log';
import { freePort, NatsCluster, NatsServerProcess } from '@flotilla/nats-embedded';
import { groupBacklog, loadServiceConfig, removeRetiredCondenserGroup } from '@flotilla/runtime';
import { loadSandboxSettings, unmountWorkspacesUnder } from '@flotilla/sandbox';
import {
  bundleService,
  formatLogLine,
  isModelSetting,
  serviceNiceness,
  ServiceProcess,
  waitReady,
} from '@flotilla/supervisor';
import { loadAgentSettings } from '@flotilla/workers';
import type { NatsConnection } from '@nats-io/transport-node';
import type { LauncherConfig } from './config.js';
import { lockHome, type HomeLock } from './home-lock.js';
import { deploymentIdentities } from './nats-config.js';
import { portIsFree } from './port-free.js';
import { isSecretsKeySetting, secretsEnvironmentFor, secretsKeySettings } from './secrets-key-file.js';

export type LauncherOutput = { info(line: string): void; warn(line: string): void; log(line: string): void };

/** The running system: its NATS address, its services, and how to stop it. */
export type RunningSystem = AsyncDisposable & {
  readonly natsUrl: string;
  readonly embedded: boolean;
  readonly services: readonly { readonly name: string; readonly health: string }[];
  /** The gateway's URL (REST under /v1, the web UI at /, the API docs at /docs). */
  readonly gatewayUrl: string;
  /** The local tenant's API key (kept in `<home>/api-key`). */
  readonly apiKey: string;
  readonly tenant: string;
  /** Resolves with a message when a service keeps crashing and the supervisor gave up on it. */
  readonly failed: Promise<string>;
};

/** The line of a service's last output that says why it stopped (its error), or the last line. */
function reasonOf(lines: readonly string[]): string {
  const error = [...lines]
    .reverse()
    .find((line) => /^\s*(\w*Error|\[cause\])\b|"level":(50|60)/.test(line) && !line.trim().startsWith('at '));
  const chosen = error ?? lines.at(-1) ?? 'no output';
  try {
    const record = JSON.parse(chosen) as { msg?: string; err?: { message?: string } };
    return [record.msg, record.err?.message].filter(Boolean).join(': ');
  } catch {
    return chosen.trim();
  }
}

/**
 * Reads the settings every service reads (the agent's, the sandbox's, the service config) here,
 * before anything starts, so a typo stops the launch with one message naming the variable.
 */
function checkServiceSettings(environment: NodeJS.ProcessEnv): void {
  loadServiceConfig('tool-runner', withoutBus(environment));
  loadAgentSettings(environment);
  loadSandboxSettings(environment);
}

function withoutBus(environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(environment).filter(([name]) => !isBusCredentialSetting(name) && name !== 'FLOTILLA_NATS_URL'),
  );
}

/**
 * Unmounts the workspace filesystems the tool runners of this home mounted (a mount outlives its
 * runner, docs/security.md, "Disk"; their files stay in their images). Only while none runs: before
 * the services start (what a killed launcher left) and after they stop, this launcher holding the home.
 */
async function unmountLeftWorkspaces(home: string, output: LauncherOutput): Promise<void> {
  const { workspaces } = loadServiceConfig('tool-runner', { ...withoutBus(process.env), FLOTILLA_HOME: home });
  const unmounted = await unmountWorkspacesUnder(workspaces);
  if (unmounted > 0) output.info(`unmounted ${unmounted} workspace filesystem(s) in ${workspaces}`);
}

const SERVICES_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The services `./dev up` starts, one process each. */
export const EMBEDDED_SERVICES = [
  'projector',
  'condenser',
  'tool-runner',
  'step-worker',
  'gateway',
  'webhooks',
  'delegator',
] as const;

/** The services that never call a model: they do not inherit the providers' keys. */
const MODEL_FREE_SERVICES: readonly string[] = ['tool-runner', 'pg-sink', 'webhooks', 'delegator'];

/** The variable that starts the PostgreSQL sink too (its database; docs/operations.md, "The PostgreSQL sink"). */
export const DATABASE_URL_VARIABLE = 'FLOTILLA_DATABASE_URL';

/** What `./dev up` starts: the services, and the PostgreSQL sink when a database is given. */
export function launchedServices(environment: NodeJS.ProcessEnv): readonly string[] {
  return environment[DATABASE_URL_VARIABLE]?.trim() ? [...EMBEDDED_SERVICES, 'pg-sink'] : EMBEDDED_SERVICES;
}

/** The consumer groups on the events stream whose service is not among `launched`, with what they have not handled. */
export async function groupsLeftBehind(
  log: EventLog,
  launched: readonly string[],
): Promise<{ readonly group: string; readonly pending: number }[]> {
  const left: { group: string; pending: number }[] = [];
  for (const group of CONSUMER_GROUPS.filter((name) => !launched.includes(name))) {
    const pending = await groupBacklog(log.jsm, log.streamName, group);
    if (pending !== undefined) left.push({ group, pending });
  }
  return left;
}

/**
 * The local key is provisioned for FLOTILLA_TENANT at each launch: launched with another tenant
 * than the last time, it (and the CLI) sees that tenant's conversations only. Returns the warning
 * to say so, and keeps the tenant of this launch in `$FLOTILLA_HOME/tenant`.
 */
export async function tenantChange(home: string, tenant: string): Promise<string | undefined> {
  const file = join(home, 'tenant');
  const last = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (last !== tenant) await writeFile(file, `${tenant}\n`, { mode: 0o600 });
  if (last === '' || last === tenant) return undefined;
  return `FLOTILLA_TENANT is ${tenant}, the last launch's was ${last}: the local key and the CLI now see ${tenant}'s conversations only; ${last}'s are still stored (launch with FLOTILLA_TENANT=${last} to see them)`;
}

/** A key kept in a file of the home directory (created with a fresh random key, readable by the owner only). */
async function keyFile(path: string): Promise<string> {
  const existing = await readFile(path, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (existing.length >= 16) return existing;
  const key = `flt_${randomBytes(32).toString('base64url')}`;
  await writeFile(path, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * The gateway's keys: the local key (`$FLOTILLA_HOME/api-key`, for FLOTILLA_TENANT: the CLI's)
 * beside the operator's own FLOTILLA_API_KEYS, and the operator's FLOTILLA_ADMIN_KEY or else the
 * home's (`$FLOTILLA_HOME/admin-key`). The gateway checks both as it would anywhere.
 */
export async function gatewayKeysFor(
  config: { readonly home: string; readonly tenant: string },
  apiKey: string,
  env: NodeJS.ProcessEnv,
): Promise<{ FLOTILLA_API_KEYS: string; FLOTILLA_ADMIN_KEY: string }> {
  const operatorKeys = env['FLOTILLA_API_KEYS']?.trim();
  const operatorAdminKey = env['FLOTILLA_ADMIN_KEY']?.trim();
  return {
    FLOTILLA_API_KEYS: [`${config.tenant}:${apiKey}`, ...(operatorKeys ? [operatorKeys] : [])].join(','),
    FLOTILLA_ADMIN_KEY: operatorAdminKey || (await keyFile(join(config.home, 'admin-key'))),
  };
}

/**
 * Starts the system on one machine: an embedded nats-server (unless one is configured), the
 * events stream, and one supervised process of each service (restarted if it crashes).
 */
export async function launch(
  config: LauncherConfig,
  output: LauncherOutput,
  options: { homeLock?: HomeLock } = {},
): Promise<RunningSystem> {
  // one system per home: nothing in it (store, keys, cli.json) changes before this launcher holds it
  const homeLock = options.homeLock ?? (await lockHome(config.home));
  try {
    const system = await launchOnHome(config, output, homeLock);
    return {
      ...system,
      [Symbol.asyncDispose]: async () => {
        await system[Symbol.asyncDispose]();
        await homeLock.release();
      },
    };
  } catch (error) {
    await homeLock.release();
    throw error;
  }
}

async function launchOnHome(
  config: LauncherConfig,
  output: LauncherOutput,
  homeLock: HomeLock,
): Promise<RunningSystem> {
  checkServiceSettings(process.env);
  let server: NatsServerProcess | NatsCluster | undefined;
  let natsUrl = config.natsUrl;
  // the embedded server refuses anonymous clients: one user per service, with its permissions
  let users: Map<string, GeneratedUser> | undefined;
  // a cluster keeps three copies unless told otherwise
  const replicasSetting = process.env['FLOTILLA_REPLICAS'] || (!natsUrl && config.natsNodes > 1 ? '3' : '1');
  const storage = loadStorageSettings({ ...process.env, FLOTILLA_REPLICAS: replicasSetting });
  if (!natsUrl) {
    const usersDir = join(config.home, 'nats-users');
    users = new Map(
      (await ensureUsers(usersDir, deploymentIdentities(config.tenantTaps))).map((user) => [user.user, user]),
    );
    const authorization = authorizationConfig([...users.values()], {
      stream: config.streamName,
      subjectPrefix: DEFAULT_SUBJECT_PREFIX,
    });
    const taps = config.tenantTaps.map((tenant) => `tap-${tenant}.password`).join(', ');
    const credentials = `no anonymous clients: each service's password is in ${usersDir}, the admin's in admin.password, a read-only tap's in tap.password${taps ? `, tenant taps' in ${taps}` : ''}`;
    if (config.natsNodes > 1) {
      const dir = join(config.home, 'nats-cluster');
      await mkdir(dir, { recursive: true });
      server = await NatsCluster.start({ size: config.natsNodes, config: authorization, dir });
      natsUrl = server.url;
      output.info(
        `a ${config.natsNodes}-node JetStream cluster on loopback: ${natsUrl} (stores in ${dir}; ${credentials}); stream and buckets R${storage.replicas}`,
      );
    } else {
      const storeDir = join(config.home, 'nats');
      await mkdir(storeDir, { recursive: true });
      let port = config.natsPort;
      if (!(await portIsFree(port))) {
        const fallback = await freePort();
        output.warn(
          `port ${port} is busy; the embedded nats-server uses ${fallback} instead (set FLOTILLA_NATS_PORT to choose)`,
        );
        port = fallback;
      }
      server = await NatsServerProcess.start({ port, storeDir, config: authorization });
      natsUrl = server.url;
      output.info(`nats-server ${natsUrl} (JetStream store ${storeDir}; ${credentials})`);
    }
  }
  // the launcher is the embedded system's admin; with a server of your own it connects as FLOTILLA_NATS_* say
  const bus = loadBusSettings(
    users ? { FLOTILLA_NATS_URL: natsUrl, ...userEnvironment(users.get('admin')!) } : process.env,
  );
  for (const warning of bus.warnings) output.warn(warning);
  let nc: NatsConnection | undefined;
  const processes: ServiceProcess[] = [];
  const services: { name: string; health: string }[] = [];
  let apiKey = '';
  let gatewayUrl = '';
  let reportFailure: (message: string) => void = () => undefined;
  const failed = new Promise<string>((resolve) => (reportFailure = resolve));
  // a service that exits before it is ready stops the launch, with its reason
  let startupFailure: ((error: Error) => void) | undefined;
  const startedUp = new Promise<void>((_resolve, reject) => (startupFailure = reject));
  startedUp.catch(() => undefined);
  const ready = new Set<string>();
  const stopAll = async (): Promise<void> => {
    await Promise.allSettled(processes.map((child) => child.stop()));
    await unmountLeftWorkspaces(config.home, output).catch((error: unknown) =>
      output.warn(`could not unmount the workspaces' filesystems: ${(error as Error).message}`),
    );
    await nc?.drain().catch(() => undefined);
    await server?.stop();
  };
  try {
    // a server of your own older than Flotilla's minimum is refused here, with the version it needs
    nc = await connectBus(bus, { name: 'flotilla-launcher', identity: 'admin' }, { maxReconnectAttempts: -1 });
    // no service runs yet: a stream of an older version moves to the current subjects here (docs/operations.md, "Upgrading")
    const log = await EventLog.open(nc, {
      streamName: config.streamName,
      replicas: storage.replicas,
      maxAgeMs: storage.streamMaxAgeMs,
      maxBytes: storage.streamMaxBytes,
      upgradeSubjects: true,
    });
    if (log.storageWarning) output.warn(log.storageWarning);
    const info = await log.jsm.streams.info(log.streamName);
    output.info(
      `events stream ${log.streamName} on ${log.subjectPrefix}.<tenant>.<conversation>.<kind> (${info.state.messages} commits stored)`,
    );
    // an older condenser's group on the events stream: its condenser is woken through its queue now (docs/operations.md)
    await removeRetiredCondenserGroup(log.jsm, log.streamName).then(
      (removed) =>
        removed &&
        output.info(
          `removed the retired condenser group's consumer on ${log.streamName} (the condenser is woken through FLOTILLA_CONDENSER_WAKEUPS)`,
        ),
      (error: unknown) =>
        output.warn(
          `could not remove the retired condenser group's consumer on ${log.streamName}: ${(error as Error).message}`,
        ),
    );
    const launched = launchedServices(process.env);
    // a group whose service no longer runs here keeps its place in the log (it resumes from it), and its pending count grows: say so
    for (const left of await groupsLeftBehind(log, launched)) {
      output.warn(
        `the ${left.group} group's consumer is on ${log.streamName} with ${left.pending} commit(s) it has not handled, and no ${left.group} runs here${left.group === 'pg-sink' ? ` (${DATABASE_URL_VARIABLE} is unset)` : ''}: start it to catch up, or remove the consumer (nats consumer rm ${log.streamName} ${left.group})`,
      );
    }
    await mkdir(config.home, { recursive: true });
    apiKey = await keyFile(join(config.home, 'api-key'));
    const tenantChanged = await tenantChange(config.home, config.tenant);
    if (tenantChanged) output.warn(tenantChanged);
    const gatewayKeys = await gatewayKeysFor(config, apiKey, process.env);
    const secretsKey = await secretsKeySettings(config.home, process.env);
    if (secretsKey.created)
      output.info(`secrets key created in ${secretsKey.file} (keep it: secrets set with it cannot be read without it)`);
    if (secretsKey.warning) output.warn(secretsKey.warning);
    let gatewayPort = config.gatewayPort;
    if (!(await portIsFree(gatewayPort))) {
      const fallback = await freePort();
      output.warn(
        `port ${gatewayPort} is busy; the gateway uses ${fallback} instead (set FLOTILLA_GATEWAY_PORT to choose)`,
      );
      gatewayPort = fallback;
    }
    gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    await homeLock.setGatewayUrl(gatewayUrl);
    // the CLI finds the local system through this file
    await writeFile(
      join(config.home, 'cli.json'),
      `${JSON.stringify({ url: gatewayUrl, api_key: apiKey }, null, 2)}\n`,
      { mode: 0o600 },
    );
    // and `flotilla tap` and `npm run audit` through this one: the URL and the read-only tap's credential, never the admin's
    const tap = users?.get('tap');
    await (tap
      ? writeLocalTap(config.home, { natsUrl, user: tap.user, passwordFile: tap.passwordFile })
      : removeLocalTap(config.home));
    await unmountLeftWorkspaces(config.home, output);
    const sources = launched.map((service) => join(SERVICES_ROOT, service, 'src', 'main.ts'));
    const bundlingStarted = performance.now();
    const entries = config.fromSource ? sources : await Promise.all(sources.map((source) => bundleService(source)));
    if (!config.fromSource)
      output.info(
        `services bundled in ${Math.round(performance.now() - bundlingStarted)} ms (FLOTILLA_FROM_SOURCE=1 runs their TypeScript under tsx)`,
      );
    for (const [index, service] of launched.entries()) {
      const isGateway = service === 'gateway';
      const healthPort = isGateway ? gatewayPort : await freePort();
      const child = new ServiceProcess({
        name: service,
        entry: entries[index]!,
        niceness: serviceNiceness(service),
        env: {
          FLOTILLA_NATS_URL: natsUrl,
          // its own credential on the embedded server; a server of your own: what the environment gives
          ...(users ? userEnvironment(users.get(service)!) : {}),
          FLOTILLA_HOME: config.home,
          FLOTILLA_STREAM: config.streamName,
          FLOTILLA_HEALTH_PORT: String(healthPort),
          FLOTILLA_REPLICAS: String(storage.replicas),
          ...(isGateway ? { FLOTILLA_GATEWAY_PORT: String(gatewayPort), ...gatewayKeys } : {}),
          // the secrets key only where secrets are set (gateway) and given to the sandbox (tool runner)
          ...secretsEnvironmentFor(service, secretsKey),
        },
        // the tool runner, the sink, the webhooks service and the delegator do not call the model: they never hold the provider's key;
        // nobody inherits the secrets key; the database's URL (which may hold its password) goes to the sink alone
        omitInherited: (name) =>
          (MODEL_FREE_SERVICES.includes(service) && isModelSetting(name)) ||
          (service !== 'pg-sink' && name === DATABASE_URL_VARIABLE) ||
          isSecretsKeySetting(name) ||
          (users !== undefined && isBusCredentialSetting(name)),
        onLine: (name, line) => output.log(formatLogLine(name, line)),
        onExit: (name, code, signal, restarting) => {
          if (!ready.has(name)) {
            startupFailure?.(new Error(`${name} could not start: ${reasonOf(child.lastLines)}`));
            return;
          }
          if (restarting || code !== 0)
            output.warn(`${name} exited (${code ?? signal})${restarting ? '; restarting' : ''}`);
        },
        onGiveUp: (name, lines) => reportFailure(`${name} keeps crashing at start (${reasonOf(lines)}); gave up on it`),
      });
      child.start();
      processes.push(child);
      services.push({ name: service, health: `http://127.0.0.1:${healthPort}` });
    }
    await Promise.race([
      Promise.all(
        services.map(async (service) => {
          await waitReady(service.health, 60_000);
          ready.add(service.name);
        }),
      ),
      startedUp,
    ]);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return {
    natsUrl,
    embedded: server !== undefined,
    services,
    gatewayUrl,
    apiKey,
    tenant: config.tenant,
    failed,
    [Symbol.asyncDispose]: stopAll,
  };
}
