import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { SandboxCgroup, type CgroupSupport } from '../cgroups.js';
import type { DiskSupport, WorkspaceDiskKind, WorkspaceDisks } from '../workspace-disk.js';
import { sandboxEnvironment, SANDBOX_HOME, SANDBOX_WORKSPACE } from '../environment.js';
import { FifoFactory } from '../fifo-factory.js';
import { defaultPrivateDir, isolatedInsidePath } from '../inside-path.js';
import { SandboxError, SandboxErrorCode } from '../errors.js';
import type {
  Sandbox,
  SandboxDescription,
  SandboxProcess,
  SandboxProvider,
  SandboxSpec,
  SpawnOptions,
} from '../sandbox.js';
import { childSandboxProcess, spawned } from '../sandbox-process.js';
import { runSelfTest } from '../self-test.js';
import { NetworkMode, type SandboxSettings } from '../settings.js';
import { bwrapArguments } from './bwrap-arguments.js';
import { prepareEtc } from './generated-etc.js';
import { SharedNetwork, mayShareNetwork } from './shared-network.js';
import { attachEgress, detachEgress, readChildPid, type Credentials } from './slirp-network.js';
import { systemBindArguments } from './system-binds.js';

export type BwrapProviderOptions = {
  /** A directory of the service's own for files made for sandboxes (never seen whole inside). */
  readonly stateDir: string;
  /**
   * The service's own directory (its home): when the service runs as root, directories at or
   * below it on the way to a workspace are made traversable (o+x, not readable) for the sandbox
   * user, which bwrap needs to reach the workspace. Other directories are never changed.
   */
  readonly ownedRoot?: string;
  /** How long a sandboxed process may take to start (its network included). */
  readonly startTimeoutMs?: number;
  /**
   * Where each sandbox gets a cgroup of its own (memory, processes and CPU of all its processes
   * together: detectCgroups); `none`: the rlimits alone (per process), and the description says why.
   */
  readonly cgroups?: CgroupSupport;
  /** Where each workspace is a filesystem of its own (detectWorkspaceDisks); `check`: measured from outside. */
  readonly disks?: DiskSupport;
};

/**
 * Sandboxes made with bubblewrap: Linux namespaces as an unprivileged user, no daemon, a few
 * milliseconds per process. Run as root, the service starts them as `settings.uid`, so that no
 * sandboxed process is root on the host and per-sandbox process limits hold.
 */
export function createBwrapProvider(settings: SandboxSettings, options: BwrapProviderOptions): SandboxProvider {
  const etc = path.join(options.stateDir, 'etc');
  prepareEtc(etc, settings.network === NetworkMode.Egress);
  const system = systemBindArguments(etc, settings.readOnlyPaths);
  const credentials: Credentials = process.getuid?.() === 0 ? { uid: settings.uid, gid: settings.gid } : undefined;
  const startTimeoutMs = options.startTimeoutMs ?? 10_000;
  const fifos = new FifoFactory(path.join(options.stateDir, 'fifos'));
  const cgroups = options.cgroups ?? { kind: 'none', reason: 'not asked for' };
  const disks = options.disks ?? { kind: 'check', reason: 'not asked for' };
  const sharesNetwork = mayShareNetwork(credentials);
  const disk =
    disks.kind === 'filesystem'
      ? ({ kind: 'filesystem' } as const)
      : ({ kind: 'checked', reason: disks.reason } as const);

  const provider: SandboxProvider = {
    describe(): SandboxDescription {
      if (cgroups.kind !== 'none')
        return {
          kind: 'bwrap',
          network: settings.network,
          isolated: true,
          limits: settings.limits,
          enforcement: `cgroup ${cgroups.kind} per sandbox, and rlimits per process`,
          networkPerSandbox: sharesNetwork,
          disk,
        };
      return {
        kind: 'bwrap',
        network: settings.network,
        isolated: true,
        limits: settings.limits,
        enforcement: 'rlimits per process',
        networkPerSandbox: sharesNetwork,
        disk,
        warning: `no cgroups can be made here (${cgroups.reason}): memory is limited per process, not for a sandbox's processes together, and CPU time per process, not its share (docs/security.md, "Limits")`,
      };
    },
    async open(spec: SandboxSpec): Promise<Sandbox> {
      // a workspace with a filesystem is mounted before anything reads it; one is made before anything writes (prepareWorkspace)
      const workspaceDisk =
        disks.kind === 'filesystem'
          ? { disks: disks.disks, found: await disks.disks.ensure(spec.workspace, false) }
          : undefined;
      if (credentials) await chown(spec.workspace, credentials.uid, credentials.gid);
      const privateDir = spec.privateDir ?? defaultPrivateDir(options.stateDir, spec.id);
      await mkdir(privateDir, { recursive: true, mode: 0o755 });
      for (const directory of [spec.workspace, privateDir, etc])
        await assertTraversable(directory, credentials, options.ownedRoot);
      return new BwrapSandbox(
        { ...spec, privateDir },
        settings,
        { system, credentials, startTimeoutMs, fifos, cgroups, sharesNetwork },
        workspaceDisk,
      );
    },
    selfTest: () => runSelfTest(provider, options.stateDir),
    releaseWorkspace: async (workspace) => {
      if (disks.kind === 'filesystem') await disks.disks.remove(workspace);
    },
  };
  return provider;
}

type Prepared = {
  readonly system: readonly string[];
  readonly credentials: Credentials;
  readonly startTimeoutMs: number;
  readonly fifos: FifoFactory;
  readonly cgroups: CgroupSupport;
  /** The processes of a sandbox share one network namespace (SharedNetwork); otherwise each has its own. */
  readonly sharesNetwork: boolean;
};

/** How a process meets its sandbox's shared network: it makes it (and settles it for the others), or enters it. */
type NetworkRole =
  { readonly founds: (network: SharedNetwork | undefined) => void } | { readonly enters: SharedNetwork } | undefined;

class BwrapSandbox implements Sandbox {
  readonly workspacePath = SANDBOX_WORKSPACE;
  readonly #processes = new Set<SandboxProcess>();
  #closed = false;
  /** Made at the first process, removed when the sandbox is closed. */
  #cgroup: Promise<SandboxCgroup> | undefined;
  #made: SandboxCgroup | undefined;

  constructor(
    private readonly spec: SandboxSpec,
    private readonly settings: SandboxSettings,
    private readonly prepared: Prepared,
    /** Where workspaces have filesystems: how this one was found at open (undefined: none made yet). */
    workspaceDisk: { readonly disks: WorkspaceDisks; readonly found: WorkspaceDiskKind | undefined } | undefined,
  ) {
    this.#disks = workspaceDisk?.disks;
    this.#disk = workspaceDisk ? workspaceDisk.found : 'checked';
  }

  readonly #disks: WorkspaceDisks | undefined;
  #disk: WorkspaceDiskKind | undefined;
  #making: Promise<void> | undefined;

  get diskLimited(): boolean {
    return this.#disk === 'filesystem';
  }

  prepareWorkspace(): Promise<void> {
    if (this.#disk !== undefined || !this.#disks) return Promise.resolve();
    this.#making ??= this.#disks.ensure(this.spec.workspace, true).then(
      (kind) => {
        this.#disk = kind;
      },
      (error: unknown) => {
        this.#making = undefined;
        throw error;
      },
    );
    return this.#making;
  }

  get id(): string {
    return this.spec.id;
  }

  get owner(): Credentials {
    return this.prepared.credentials;
  }

  get hostWorkspace(): string {
    return this.spec.workspace;
  }

  get privateDir(): string {
    return this.spec.privateDir!;
  }

  makeFifo(hostPath: string): Promise<void> {
    return this.prepared.fifos.make(hostPath);
  }

  toInside(hostPath: string): string {
    return isolatedInsidePath(hostPath, this.spec.workspace, this.privateDir);
  }

  /** Set at the first process started in it (a terminal's shell outlives its command). */
  holding = false;

  async spawn(command: string, args: readonly string[], options: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.#closed) throw new SandboxError(SandboxErrorCode.Closed, `the sandbox of ${this.spec.id} is closed`);
    await this.prepareWorkspace();
    this.holding = true;
    const egress = this.settings.network === NetworkMode.Egress;
    const cgroup = await this.#cgroupOf();
    const role = await this.#networkRole();
    const entry = role && 'enters' in role ? role.enters.enter(this.prepared.credentials!) : undefined;
    if (role && 'enters' in role && !entry)
      throw new SandboxError(SandboxErrorCode.Closed, `the sandbox of ${this.spec.id} is closed`);
    // egress given per process where processes do not share a network, once to the shared one by its founder
    const ownEgress = egress && !role;
    // the child's fds: 0-2 pipes, then the gate's two: its first process waits there until it is in
    // the sandbox's cgroup and has its network, so that everything the command starts is born in both
    const gate = ownEgress || cgroup || (role && 'founds' in role) ? { infoFd: 3, blockFd: 4 } : undefined;
    const argv = bwrapArguments(
      {
        system: this.prepared.system,
        workspace: this.spec.workspace,
        privateDir: this.privateDir,
        cwd: options.cwd ?? SANDBOX_WORKSPACE,
        limits: this.settings.limits,
        ...(gate ? { gate } : {}),
        sharesNetwork: entry !== undefined,
      },
      command,
      args,
    );
    // bwrap's options (host paths among them) go through a pipe (`--args`), not its command line:
    // its pid 1 inside shows only `bwrap --args N -- <command>` in /proc/1/cmdline
    const end = argv.indexOf('--');
    const argsFd = gate ? 5 : 3;
    const bwrap = ['bwrap', '--args', String(argsFd), ...argv.slice(end)];
    let child: ChildProcess;
    try {
      // a process entering its sandbox's network starts as nsenter (which becomes the sandbox user, then bwrap)
      const [file, ...rest] = entry ? ['nsenter', ...entry.args, ...bwrap] : bwrap;
      child = spawn(file!, rest, {
        env: sandboxEnvironment(SANDBOX_HOME, this.spec.env, options.env),
        detached: true,
        stdio: Array.from({ length: argsFd + 1 }, () => 'pipe' as const),
        ...(entry ? {} : (this.prepared.credentials ?? {})),
      });
      ((child.stdio as readonly unknown[])[argsFd] as Writable).end(Buffer.from(`${argv.slice(0, end).join('\0')}\0`));
      await spawned(child);
    } catch (error) {
      if (role && 'founds' in role) role.founds(undefined);
      entry?.release();
      throw new SandboxError(
        SandboxErrorCode.Unavailable,
        `bwrap could not start (${(error as Error).message}): install bubblewrap (Debian: apt-get install bubblewrap)`,
        { cause: error },
      );
    }
    let network: ChildProcess | undefined;
    const sandboxed = childSandboxProcess(child, () => {
      this.#processes.delete(sandboxed);
      if (network) detachEgress(network);
      entry?.release();
    });
    this.#processes.add(sandboxed);
    if (gate) {
      let pid: number | undefined;
      try {
        pid = await readChildPid(child.stdio[gate.infoFd] as Readable, this.prepared.startTimeoutMs);
        cgroup?.join(pid);
        if (ownEgress) network = await attachEgress(pid, this.prepared.credentials, this.prepared.startTimeoutMs);
        if (role && 'founds' in role)
          role.founds(await SharedNetwork.take(pid, egress, this.prepared.credentials, this.prepared.startTimeoutMs));
        (child.stdio[gate.blockFd] as Writable).end('1');
      } catch (error) {
        if (role && 'founds' in role) role.founds(undefined);
        sandboxed.signal('SIGKILL');
        // bwrap's pid 1, still waiting at its gate, may not have its parent-death signal yet
        if (pid !== undefined) killQuietly(pid);
        throw error instanceof SandboxError
          ? error
          : new SandboxError(
              SandboxErrorCode.StartFailed,
              `the sandbox could not be set up: ${(error as Error).message}`,
              { cause: error },
            );
      }
    }
    return sandboxed;
  }

  /** Settled once a founding process has made the sandbox's shared network (undefined: it failed, the next process tries). */
  #network: Promise<SharedNetwork | undefined> | undefined;

  async #networkRole(): Promise<NetworkRole> {
    if (!this.prepared.sharesNetwork) return undefined;
    for (;;) {
      const pending = this.#network;
      if (!pending) {
        let founds!: (network: SharedNetwork | undefined) => void;
        let settled = false;
        this.#network = new Promise((resolve) => {
          founds = (network) => {
            if (settled) return;
            settled = true;
            resolve(network);
          };
        });
        return { founds };
      }
      const network = await pending;
      if (network) return { enters: network };
      if (this.#network === pending) this.#network = undefined;
    }
  }

  /** Processes the kernel killed for the sandbox's memory (all its processes together) so far; 0 without cgroups. */
  outOfMemoryKills(): number {
    return this.#made?.outOfMemoryKills() ?? 0;
  }

  #cgroupOf(): Promise<SandboxCgroup | undefined> {
    const support = this.prepared.cgroups;
    if (support.kind === 'none') return Promise.resolve(undefined);
    // swept while none of its processes was left (sweepIdleCgroups, by a runner starting beside this one): made again
    if (this.#made && !this.#made.exists()) this.#cgroup = undefined;
    this.#cgroup ??= SandboxCgroup.create(support, this.spec.id, this.settings.limits).then(
      (made) => (this.#made = made),
      (error: unknown) => {
        this.#cgroup = undefined;
        throw new SandboxError(
          SandboxErrorCode.StartFailed,
          `the sandbox's cgroup could not be made: ${(error as Error).message}`,
          { cause: error },
        );
      },
    );
    return this.#cgroup;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#processes];
    for (const member of running) member.signal('SIGKILL');
    await Promise.race([
      Promise.all(running.map((member) => member.exited)),
      new Promise((resolve) => setTimeout(resolve, 2_000)),
    ]);
    const network = this.#network;
    this.#network = undefined;
    await (await network)?.close();
    const cgroup = this.#cgroup;
    this.#cgroup = undefined;
    this.#made = undefined;
    // a process that outlived its group's kill keeps the cgroup busy: it is left, limits and all, and reused by the next sandbox of this id
    await (await cgroup?.catch(() => undefined))?.remove().catch(() => undefined);
  }
}

/**
 * bwrap runs as the sandbox user, so that user must be able to traverse every directory on the
 * way to the workspace (it cannot list them, and inside the sandbox it sees none of them).
 */
async function assertTraversable(
  workspace: string,
  credentials: Credentials,
  ownedRoot: string | undefined,
): Promise<void> {
  if (!credentials) return; // the sandbox user is the service's own
  const owned = ownedRoot === undefined ? undefined : path.resolve(ownedRoot);
  for (let directory = path.dirname(path.resolve(workspace)); ; directory = path.dirname(directory)) {
    const info = await stat(directory);
    const traversable =
      info.uid === credentials.uid
        ? (info.mode & 0o100) !== 0
        : info.gid === credentials.gid
          ? (info.mode & 0o010) !== 0
          : (info.mode & 0o001) !== 0;
    if (!traversable) {
      const isOwned = owned !== undefined && (directory === owned || directory.startsWith(`${owned}${path.sep}`));
      if (!isOwned) {
        throw new SandboxError(
          SandboxErrorCode.Unavailable,
          `the sandbox user (uid ${credentials.uid}) cannot reach the workspaces: ${directory} is not traversable (mode ${(info.mode & 0o777).toString(8)}). ` +
            'Put FLOTILLA_HOME or FLOTILLA_WORKSPACES under a directory every user may traverse (e.g. /var/lib/flotilla), or set FLOTILLA_SANDBOX_UID to a user that may.',
        );
      }
      await chmod(directory, (info.mode & 0o7777) | 0o001);
    }
    if (directory === path.dirname(directory)) return;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
