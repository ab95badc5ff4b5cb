import { createHash } from 'node:crypto';
import type Dockerode from 'dockerode';
import { SANDBOX_HOME, SANDBOX_PATH, SANDBOX_PRIVATE, SANDBOX_WORKSPACE } from '../environment.js';
import type { SandboxLimits } from '../settings.js';

/** Every sandbox container carries it, so that leftovers can be found. */
export const SANDBOX_LABEL = 'flotilla.sandbox';
/** The conversation's sandbox id (SandboxSpec.id), verbatim. */
export const SANDBOX_ID_LABEL = 'flotilla.sandbox.id';
/** The service instance that made it: a restarted instance removes its own leftovers only. */
export const SANDBOX_OWNER_LABEL = 'flotilla.sandbox.owner';

/** The user-defined bridge network of the `egress` mode, made by the provider when missing. */
export const DEFAULT_EGRESS_NETWORK = 'flotilla-sandbox-egress';
/** Its bridge interface on the engine's host (15 characters at most), for firewall rules. */
export const DEFAULT_EGRESS_BRIDGE = 'flotilla-egress';

/**
 * A container name from a sandbox id: readable (the id's safe characters, shortened) and unique
 * (a hash of the whole id and of the owning instance, so that ids that sanitise alike still
 * differ, and two instances sharing an engine never take each other's names). Matches the
 * engine's `[a-zA-Z0-9][a-zA-Z0-9_.-]+`.
 */
export function containerName(id: string, owner = ''): string {
  const hash = createHash('sha256').update(`${owner}\0${id}`).digest('hex').slice(0, 12);
  const readable = id
    .replace(/[^a-zA-Z0-9_.-]+/g, '-')
    .replace(/^[^a-zA-Z0-9]+/, '')
    .slice(0, 40)
    .replace(/[^a-zA-Z0-9]+$/, '');
  return `flotilla-sbx-${readable === '' ? '' : `${readable}-`}${hash}`;
}

export type ContainerPlan = {
  readonly name: string;
  readonly image: string;
  /** The workspace as the engine's host sees it. */
  readonly hostWorkspace: string;
  /** The service's directory for the conversation as the engine's host sees it (seen read-only). */
  readonly hostPrivate: string;
  readonly uid: number;
  readonly gid: number;
  readonly limits: SandboxLimits;
  /** `none`, or the name of the egress network. */
  readonly networkMode: string;
  readonly labels: Readonly<Record<string, string>>;
};

/**
 * The container of one conversation. It runs nothing of the agent's: its main process (under
 * the engine's init, which reaps orphans) only waits for its stdin to close. That stdin is the
 * service's attached connection (`StdinOnce`), so the container stops when the service goes
 * away, and is then removed (`AutoRemove`). Commands run in it as execs.
 *
 * No secrets here: the container's configuration is readable by anyone with engine access
 * (`docker inspect`), so the conversation's variables go into each exec's environment only.
 */
export function containerOptions(plan: ContainerPlan): Dockerode.ContainerCreateOptions {
  const { limits } = plan;
  return {
    name: plan.name,
    Image: plan.image,
    Hostname: 'sandbox',
    User: `${plan.uid}:${plan.gid}`,
    Entrypoint: ['/bin/sh', '-c', 'exec cat > /dev/null'],
    Cmd: [],
    Env: [`PATH=${SANDBOX_PATH}`, `HOME=${SANDBOX_HOME}`, 'LANG=C.UTF-8', 'TERM=dumb'],
    WorkingDir: SANDBOX_WORKSPACE,
    Labels: { ...plan.labels },
    Tty: false,
    OpenStdin: true,
    StdinOnce: true,
    AttachStdin: true,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: {
      Init: true,
      AutoRemove: true,
      RestartPolicy: { Name: 'no', MaximumRetryCount: 0 },
      Privileged: false,
      ReadonlyRootfs: true,
      // a bind mount of the host's directory (not a copy): files, and FIFOs, are shared live.
      // `Mounts` rather than `Binds`: a missing source is an error, not a new empty directory.
      Mounts: [
        {
          Type: 'bind',
          Source: plan.hostWorkspace,
          Target: SANDBOX_WORKSPACE,
          ReadOnly: false,
          BindOptions: { Propagation: 'rprivate' },
        },
        {
          Type: 'bind',
          Source: plan.hostPrivate,
          Target: SANDBOX_PRIVATE,
          ReadOnly: true,
          BindOptions: { Propagation: 'rprivate' },
        },
      ],
      Tmpfs: {
        '/tmp': `rw,nosuid,nodev,size=${limits.tmpBytes},mode=1777`,
        [SANDBOX_HOME]: `rw,nosuid,nodev,size=${limits.tmpBytes},mode=0700,uid=${plan.uid},gid=${plan.gid}`,
      },
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges:true'],
      IpcMode: 'private',
      NetworkMode: plan.networkMode,
      PidsLimit: limits.processes,
      Memory: limits.memoryBytes,
      // no swap beyond the memory limit
      MemorySwap: limits.memoryBytes,
      NanoCpus: Math.round(limits.cpus * 1e9),
      // a sandbox is what the kernel kills first when the host runs out of memory
      OomScoreAdj: 500,
      // per process, like the other kinds; RLIMIT_NPROC is left alone (it counts the uid's
      // processes across the host): the cgroup's PidsLimit bounds processes instead
      Ulimits: [
        { Name: 'cpu', Soft: limits.cpuSeconds, Hard: limits.cpuSeconds },
        { Name: 'fsize', Soft: limits.fileBytes, Hard: limits.fileBytes },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
    },
  };
}

/** `KEY=value` lines of an environment, leaving out names the engine could not express. */
export function environmentList(environment: Readonly<Record<string, string>>): string[] {
  return Object.entries(environment)
    .filter(([name, value]) => name !== '' && !name.includes('=') && !name.includes('\0') && !value.includes('\0'))
    .map(([name, value]) => `${name}=${value}`);
}

/** The variable names of `KEY=value` lines (an image's ENV). */
export function variableNames(lines: readonly string[] | null | undefined): string[] {
  return (lines ?? [])
    .map((line) => line.slice(0, line.indexOf('=') === -1 ? line.length : line.indexOf('=')))
    .filter(Boolean);
}
