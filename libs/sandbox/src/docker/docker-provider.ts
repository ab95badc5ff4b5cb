import { chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import Dockerode from 'dockerode';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import type { Sandbox, SandboxDescription, SandboxProvider, SandboxSpec } from '../sandbox.js';
import { runSelfTest } from '../self-test.js';
import { NetworkMode, type SandboxSettings } from '../settings.js';
import {
  containerName,
  containerOptions,
  DEFAULT_EGRESS_NETWORK,
  SANDBOX_ID_LABEL,
  SANDBOX_LABEL,
  SANDBOX_OWNER_LABEL,
} from './container-plan.js';
import {
  ensureEgressNetwork,
  ensureImage,
  messageOf,
  pingEngine,
  removeContainer,
  removeLeftovers,
  silentDockerLogger,
  statusOf,
  type DockerSandboxLogger,
} from './docker-engine.js';
import { FifoFactory } from '../fifo-factory.js';
import { defaultPrivateDir } from '../inside-path.js';
import { DockerSandbox } from './docker-sandbox.js';
import { probeReachable, reachabilityTargets } from './reachability.js';

export type DockerProviderOptions = {
  /** The engine client (default: `new Dockerode()`, which follows DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH). */
  readonly docker?: Dockerode;
  readonly logger?: DockerSandboxLogger;
  /** The user-defined bridge network of the egress mode, made when missing. */
  readonly egressNetwork?: string;
  /**
   * Marks this instance's containers, so that when it restarts it removes what it left behind
   * and nothing of other instances on the same engine. Default: FLOTILLA_INSTANCE_ID, else the
   * host name (one instance per host).
   */
  readonly owner?: string;
  /**
   * The engine's host path of a path this service sees, when they differ (this service in a
   * container with the workspaces mounted from the host at another path). The engine resolves
   * bind mounts on its own host; default: the same path.
   */
  readonly hostPath?: (servicePath: string) => string;
  /**
   * Where the self-test makes its throwaway workspace: a directory the engine sees (through
   * hostPath), like the workspaces. Default: `.flotilla-self-test` in FLOTILLA_WORKSPACES, else
   * in the system's temporary directory.
   */
  readonly stateDir?: string;
  /** NATS address(es) the self-test proves unreachable from inside (default FLOTILLA_NATS_URL, else nats://127.0.0.1:4222). */
  readonly natsUrl?: string;
  /** How long the engine may take to answer its ping. Default 5 s. */
  readonly pingTimeoutMs?: number;
};

/** The engine binds a workspace from its own mount namespace, which sees none of the tool runner's mounts. */
const DOCKER_DISK = {
  kind: 'checked',
  reason: 'the docker kind: the engine binds workspaces as its host sees them, not the tool runner’s mounts',
} as const;

/**
 * Sandboxes that are Docker containers: one per conversation, made through the engine's API.
 * Isolation is the engine's: namespaces, cgroup limits (processes, memory, CPU), a read-only
 * image as the system, no capabilities, no privilege gain, the engine's default seccomp and
 * AppArmor profiles, and no network at all (`none`) or a bridge of its own (`egress`).
 */
export function createDockerProvider(settings: SandboxSettings, options: DockerProviderOptions = {}): SandboxProvider {
  const docker = options.docker ?? new Dockerode();
  const logger = options.logger ?? silentDockerLogger;
  const owner = options.owner ?? (process.env['FLOTILLA_INSTANCE_ID'] || hostname());
  const egressNetwork = options.egressNetwork ?? DEFAULT_EGRESS_NETWORK;
  const hostPath = options.hostPath ?? ((servicePath: string) => servicePath);
  const stateDir = options.stateDir ?? path.join(process.env['FLOTILLA_WORKSPACES'] || tmpdir(), '.flotilla-self-test');
  const fifos = new FifoFactory(path.join(stateDir, 'fifos'));

  // made once, on first need; a failure is not kept, so that the next call tries again
  let image: Promise<string[]> | undefined;
  const imageVariables = (): Promise<string[]> => {
    image ??= ensureImage(docker, settings.image, logger).catch((error: unknown) => {
      image = undefined;
      throw error;
    });
    return image;
  };
  let network: Promise<void> | undefined;
  let opened = 0;
  const networkMode = async (): Promise<string> => {
    if (settings.network === NetworkMode.None) return 'none';
    network ??= ensureEgressNetwork(docker, egressNetwork, logger).catch((error: unknown) => {
      network = undefined;
      throw error;
    });
    await network;
    return egressNetwork;
  };

  const provider: SandboxProvider = {
    describe(): SandboxDescription {
      return {
        kind: 'docker',
        network: settings.network,
        isolated: true,
        limits: settings.limits,
        enforcement: 'docker (cgroups)',
        networkPerSandbox: true,
        disk: DOCKER_DISK,
      };
    },

    async open(spec: SandboxSpec): Promise<Sandbox> {
      const [foreignVariables, mode, user] = await Promise.all([
        imageVariables(),
        networkMode(),
        sandboxUser(spec.workspace, settings),
      ]);
      const name = containerName(spec.id, owner);
      const hostWorkspace = hostPath(path.resolve(spec.workspace));
      const privateDir = spec.privateDir ?? defaultPrivateDir(stateDir, spec.id);
      await mkdir(privateDir, { recursive: true, mode: 0o755 });
      const create = containerOptions({
        name,
        image: settings.image,
        hostWorkspace,
        hostPrivate: hostPath(path.resolve(privateDir)),
        uid: user.uid,
        gid: user.gid,
        limits: settings.limits,
        networkMode: mode,
        labels: { [SANDBOX_LABEL]: '1', [SANDBOX_ID_LABEL]: spec.id, [SANDBOX_OWNER_LABEL]: owner },
      });
      // one this instance left for the conversation (a previous sandbox, or a previous run of
      // this instance that died): replaced. Other owners' containers end with their lifelines.
      await removeContainer(docker, name).catch(() => undefined);
      let container: Dockerode.Container;
      try {
        container = await docker.createContainer(create);
      } catch (error) {
        if (statusOf(error) === 404) image = undefined; // removed from the engine meanwhile: pull it again next time
        throw createFailure(error, spec, hostWorkspace);
      }
      let lifeline: Duplex | undefined;
      try {
        lifeline = (await container.attach({
          stream: true,
          stdin: true,
          stdout: false,
          stderr: false,
          hijack: true,
        })) as Duplex;
        lifeline.on('error', () => undefined);
        await container.start();
      } catch (error) {
        lifeline?.destroy();
        await removeContainer(docker, container.id).catch(() => undefined);
        throw new SandboxError(
          SandboxErrorCode.StartFailed,
          `the sandbox container of ${spec.id} did not start: ${messageOf(error)}`,
          { cause: error, isRetryable: true },
        );
      }
      opened += 1;
      (lifeline as Duplex & { setKeepAlive?: (enable: boolean, delayMs: number) => void }).setKeepAlive?.(true, 30_000);
      logger.debug({ sandbox: spec.id, container: container.id }, 'sandbox container started');
      return new DockerSandbox(
        { ...spec, privateDir },
        {
          docker,
          container,
          lifeline,
          user: `${user.uid}:${user.gid}`,
          owner: user.isServiceUser ? undefined : { uid: user.uid, gid: user.gid },
          foreignVariables: [...foreignVariables, 'HOSTNAME'],
          logger,
          fifos,
        },
      );
    },

    /**
     * The engine answers, the image is there (pulled if not), this instance's leftovers are
     * removed, and a throwaway sandbox shows the isolation: no service environment, no host
     * path outside its workspace, a read-only root, a writable workspace, and no route to NATS.
     */
    async selfTest(): Promise<void> {
      await pingEngine(docker, options.pingTimeoutMs ?? 5_000);
      await imageVariables();
      // only before this provider opened anything: its own sandboxes are not leftovers
      if (opened === 0)
        await removeLeftovers(docker, owner, logger).catch((error: unknown) =>
          logger.warn({ err: messageOf(error) }, 'could not list leftover sandbox containers'),
        );
      await runSelfTest(provider, stateDir);
      await checkNatsUnreachable();
    },
  };

  async function checkNatsUnreachable(): Promise<void> {
    const targets = await reachabilityTargets(
      options.natsUrl ?? (process.env['FLOTILLA_NATS_URL'] || 'nats://127.0.0.1:4222'),
    );
    await mkdir(stateDir, { recursive: true });
    const root = await mkdtemp(path.join(stateDir, 'self-test-'));
    try {
      const sandbox = await provider.open({ id: `self-test-${path.basename(root)}`, workspace: root });
      let open: string[];
      try {
        open = await probeReachable(sandbox, targets);
      } catch (error) {
        throw new SandboxError(
          SandboxErrorCode.Unavailable,
          `the docker sandbox cannot run its self-test here: ${messageOf(error)}`,
          { cause: error },
        );
      } finally {
        await sandbox.close();
      }
      if (open.length === 0) return;
      if (settings.network === NetworkMode.None) {
        throw new SandboxError(
          SandboxErrorCode.NotIsolated,
          `the docker sandbox does not isolate here: with the network mode none it reached ${open.join(', ')} (NATS). Refusing to run the agent's commands with it.`,
        );
      }
      logger.warn(
        { reachable: open },
        'a docker sandbox in the egress mode can reach the NATS address: only its credentials keep the bus closed; add firewall rules for the egress network (docs/security.md, "The docker kind")',
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }

  return provider;
}

/**
 * Who the processes run as: the service's own uid:gid when it is not root (so that the
 * workspace's files belong to the same user on both sides), else `settings.uid`:`settings.gid`,
 * to whom the workspace is then given (its top directory, as the bwrap kind does). Never root.
 */
async function sandboxUser(
  workspace: string,
  settings: SandboxSettings,
): Promise<{ uid: number; gid: number; isServiceUser: boolean }> {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (uid !== undefined && gid !== undefined && uid !== 0) return { uid, gid, isServiceUser: true };
  if (uid === 0) await chown(workspace, settings.uid, settings.gid);
  return { uid: settings.uid, gid: settings.gid, isServiceUser: false };
}

function createFailure(error: unknown, spec: SandboxSpec, hostWorkspace: string): SandboxError {
  const message = messageOf(error);
  if (/bind source path does not exist|invalid mount config/i.test(message)) {
    return new SandboxError(
      SandboxErrorCode.Unavailable,
      `the Docker engine cannot see the workspace ${hostWorkspace} (${message}): it resolves bind mounts on its own host. ` +
        "Keep the workspaces at the same path on the engine's host and in this service (e.g. -v /var/lib/flotilla:/var/lib/flotilla), or map them with the provider's hostPath option.",
      { cause: error },
    );
  }
  if (statusOf(error) === 404)
    return new SandboxError(
      SandboxErrorCode.Unavailable,
      `the sandbox image is missing on the Docker engine: ${message}`,
      { cause: error, isRetryable: true },
    );
  return new SandboxError(
    SandboxErrorCode.StartFailed,
    `could not create the sandbox container of ${spec.id}: ${message}`,
    { cause: error, isRetryable: true },
  );
}
