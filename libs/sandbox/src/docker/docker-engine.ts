import type Dockerode from 'dockerode';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import {
  DEFAULT_EGRESS_BRIDGE,
  DEFAULT_EGRESS_NETWORK,
  SANDBOX_LABEL,
  SANDBOX_OWNER_LABEL,
  variableNames,
} from './container-plan.js';

/** Pino-compatible (`logger.warn({ fields }, 'message')`): services pass theirs. */
export type DockerSandboxLogger = {
  debug(fields: object, message?: string): void;
  info(fields: object, message?: string): void;
  warn(fields: object, message?: string): void;
  error(fields: object, message?: string): void;
};

const ignore = (): void => undefined;
export const silentDockerLogger: DockerSandboxLogger = { debug: ignore, info: ignore, warn: ignore, error: ignore };

/** The HTTP status of an engine error (docker-modem sets `statusCode`), if it has one. */
export function statusOf(error: unknown): number | undefined {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.trim() : String(error);
}

/** Where the client talks to the engine, for error messages. */
export function engineAddress(docker: Dockerode): string {
  const modem = docker.modem as { socketPath?: unknown; host?: unknown; port?: unknown; protocol?: unknown };
  if (typeof modem.socketPath === 'string') return `unix://${modem.socketPath}`;
  if (typeof modem.host === 'string')
    return `${typeof modem.protocol === 'string' ? modem.protocol : 'http'}://${modem.host}${modem.port ? `:${String(modem.port)}` : ''}`;
  return 'the default engine address';
}

/** Throws `sandbox_unavailable`, saying what to do, when no engine answers within `timeoutMs`. */
export async function pingEngine(docker: Dockerode, timeoutMs: number): Promise<void> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    await Promise.race([
      (docker as unknown as { ping(options: { abortSignal: AbortSignal }): Promise<unknown> }).ping({
        abortSignal: abort.signal,
      }),
      new Promise((_, reject) =>
        abort.signal.addEventListener('abort', () => reject(new Error(`no answer within ${timeoutMs} ms`))),
      ),
    ]);
  } catch (error) {
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `the docker sandbox kind needs a Docker engine, and none answered at ${engineAddress(docker)} (${messageOf(error)}). ` +
        'Point DOCKER_HOST at one (unix:///var/run/docker.sock, or tcp://host:2376 with DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH), ' +
        "or mount the engine's socket into this container (-v /var/run/docker.sock:/var/run/docker.sock), or choose another kind (FLOTILLA_SANDBOX=bwrap).",
      { cause: error, isRetryable: true },
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The image's own variables (its ENV lines), pulling the image first when the engine does not
 * have it. Throws `sandbox_unavailable` naming the image when it cannot be had.
 */
export async function ensureImage(docker: Dockerode, image: string, logger: DockerSandboxLogger): Promise<string[]> {
  try {
    return variableNames((await docker.getImage(image).inspect()).Config?.Env);
  } catch (error) {
    if (statusOf(error) !== 404) {
      throw new SandboxError(
        SandboxErrorCode.Unavailable,
        `the Docker engine could not inspect the sandbox image ${image}: ${messageOf(error)}`,
        { cause: error, isRetryable: true },
      );
    }
  }
  logger.info({ image }, 'pulling the sandbox image');
  try {
    const progress = await docker.pull(image);
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        progress,
        (error: unknown, events: readonly { error?: string; errorDetail?: { message?: string } }[] | undefined) => {
          const failed = (events ?? []).find((event) => event.error !== undefined || event.errorDetail !== undefined);
          if (error) reject(error instanceof Error ? error : new Error(String(error)));
          else if (failed) reject(new Error(failed.errorDetail?.message ?? failed.error ?? 'the pull failed'));
          else resolve();
        },
      );
    });
    return variableNames((await docker.getImage(image).inspect()).Config?.Env);
  } catch (error) {
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `the sandbox image ${image} is not on the Docker engine and could not be pulled (${messageOf(error)}). ` +
        `Pull or load it on the engine (docker pull ${image}), or set FLOTILLA_SANDBOX_IMAGE to an image it has.`,
      { cause: error, isRetryable: true },
    );
  }
}

/**
 * The user-defined bridge network of the egress mode, made if missing: the outside world
 * through the engine host's NAT, no traffic between the containers on it (`enable_icc=false`),
 * no IPv6. An existing network of that name is used as it is, with a warning if it lets its
 * containers talk to each other.
 */
export async function ensureEgressNetwork(docker: Dockerode, name: string, logger: DockerSandboxLogger): Promise<void> {
  try {
    const existing = await docker.getNetwork(name).inspect();
    const icc = (existing as { Options?: Record<string, string> }).Options?.['com.docker.network.bridge.enable_icc'];
    if (icc !== 'false')
      logger.warn(
        { network: name },
        'the sandbox egress network lets its containers reach each other (com.docker.network.bridge.enable_icc is not false): conversations on it can talk to each other; recreate it or let the provider create it',
      );
    return;
  } catch (error) {
    if (statusOf(error) !== 404)
      throw new SandboxError(
        SandboxErrorCode.Unavailable,
        `the Docker engine could not inspect the network ${name}: ${messageOf(error)}`,
        { cause: error, isRetryable: true },
      );
  }
  try {
    await docker.createNetwork({
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Internal: false,
      EnableIPv6: false,
      Options: {
        'com.docker.network.bridge.enable_icc': 'false',
        ...(name === DEFAULT_EGRESS_NETWORK ? { 'com.docker.network.bridge.name': DEFAULT_EGRESS_BRIDGE } : {}),
      },
      Labels: { [SANDBOX_LABEL]: '1' },
    });
    logger.info({ network: name }, 'created the sandbox egress network');
  } catch (error) {
    if (statusOf(error) === 409) return; // made meanwhile by another instance
    throw new SandboxError(
      SandboxErrorCode.Unavailable,
      `the Docker engine could not create the sandbox egress network ${name}: ${messageOf(error)}`,
      { cause: error, isRetryable: true },
    );
  }
}

/** Force-removes a container; one that is gone or already being removed is fine. */
export async function removeContainer(docker: Dockerode, idOrName: string): Promise<void> {
  try {
    await docker.getContainer(idOrName).remove({ force: true });
  } catch (error) {
    const status = statusOf(error);
    if (status === 404) return;
    if (status === 409 && /already in progress/i.test(messageOf(error))) return;
    throw error;
  }
}

/** Removes the sandbox containers a previous run of this owner left (it died without closing them). */
export async function removeLeftovers(docker: Dockerode, owner: string, logger: DockerSandboxLogger): Promise<number> {
  const leftovers = await docker.listContainers({
    all: true,
    filters: { label: [`${SANDBOX_LABEL}=1`, `${SANDBOX_OWNER_LABEL}=${owner}`] },
  });
  for (const leftover of leftovers) {
    try {
      await removeContainer(docker, leftover.Id);
    } catch (error) {
      logger.warn({ container: leftover.Id, err: messageOf(error) }, 'could not remove a leftover sandbox container');
    }
  }
  if (leftovers.length > 0) logger.info({ owner, removed: leftovers.length }, 'removed leftover sandbox containers');
  return leftovers.length;
}
