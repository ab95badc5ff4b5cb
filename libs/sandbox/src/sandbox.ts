import type { Readable, Writable } from 'node:stream';
import type { NetworkMode, SandboxKind, SandboxLimits } from './settings.js';

/** What one conversation's sandbox is made of. */
export type SandboxSpec = {
  /** Unique per conversation (e.g. `tenant.conversation`); names containers and logs. */
  readonly id: string;
  /** The workspace on the host: an existing directory, seen read-write inside. */
  readonly workspace: string;
  /** Variables added to the scratch environment of every process (the conversation's secrets). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * The service's own directory for the conversation (terminal FIFOs, saved outputs, the task
   * list): outside the workspace, so the agent can neither change it nor plant links in it, and
   * seen read-only inside at `/run/flotilla`. Default: one under the provider's state directory.
   */
  readonly privateDir?: string;
};

export type SpawnOptions = {
  /** Working directory inside the sandbox (default: the workspace). */
  readonly cwd?: string;
  /** Variables added to this process's environment only. */
  readonly env?: Readonly<Record<string, string>>;
};

export type ProcessExit = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

/** A process running inside a sandbox, driven through pipes. */
export interface SandboxProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** The host pid of the process this service started (bwrap's for the bwrap kind), when there is one. */
  readonly pid: number | undefined;
  /** Resolves once the process has exited (and with it, everything it started). */
  readonly exited: Promise<ProcessExit>;
  /** Whether it has exited. */
  readonly hasExited: boolean;
  /** Send a signal to the process and every process it started (its process group). */
  signal(signal: NodeJS.Signals): void;
}

/** One conversation's sandbox: its workspace seen at a fixed path, and the processes run in it. */
export interface Sandbox {
  readonly id: string;
  /** The workspace directory on the host. */
  readonly hostWorkspace: string;
  /** The same directory as processes inside see it (`/workspace`, or the host path for `none`). */
  readonly workspacePath: string;
  /**
   * The host user sandboxed processes run as, when it is not the service's own (the service runs
   * as root): files the service writes into the workspace are given to it, so the agent can change them.
   */
  readonly owner: { readonly uid: number; readonly gid: number } | undefined;
  /** The service's own directory for the conversation on the host (see SandboxSpec.privateDir); may not exist yet. */
  readonly privateDir: string;
  /** A host path inside the workspace or the private directory as processes inside see it. */
  toInside(hostPath: string): string;
  /** Make a FIFO (mode 0644) at `hostPath`, in the private directory: the terminal's stdin. */
  makeFifo(hostPath: string): Promise<void>;
  /** Start a process inside. The process dies with the sandbox, and with the service that started it. */
  spawn(command: string, args: readonly string[], options?: SpawnOptions): Promise<SandboxProcess>;
  /** Kill every process it runs and release what it holds (the workspace stays). */
  close(): Promise<void>;
  /**
   * Whether it holds anything beyond its description: a process started in it (a terminal's
   * shell lives on between commands), or its container. One that holds nothing costs nothing open
   * and loses nothing when stopped.
   */
  readonly holding: boolean;
  /**
   * Processes the kernel killed so far because the sandbox as a whole went past its memory (a
   * cgroup's or a container's OOM kills); absent where memory is limited per process only.
   */
  outOfMemoryKills?(): number;
  /**
   * True when the workspace is a filesystem of its own, as large as the quota: a write past it
   * fails inside at once (ENOSPC), so nothing needs to measure it from outside.
   */
  readonly diskLimited?: boolean;
  /**
   * Makes the workspace ready to be written (its filesystem, where it gets one, made and mounted):
   * called before the service writes into it; a process started in the sandbox does it itself.
   */
  prepareWorkspace?(): Promise<void>;
}

/** What a provider reports of itself (in logs and `/v1/server-info`). */
export type SandboxDescription = {
  readonly kind: SandboxKind;
  readonly network: NetworkMode;
  /** False only for `none`: processes run with the service's own privileges. */
  readonly isolated: boolean;
  readonly limits: SandboxLimits;
  /** How limits are enforced here (e.g. `rlimits`, `cgroup v2`, `docker`). */
  readonly enforcement: string;
  /** How the workspace's quota is held: `filesystem` (one per workspace) or `checked` from outside, and why not the first. */
  readonly disk: { readonly kind: 'filesystem' } | { readonly kind: 'checked'; readonly reason: string };
  /**
   * The processes of a sandbox share one network (a server one command starts is reachable from
   * the next, the browser among them); false: each process has a network namespace of its own.
   */
  readonly networkPerSandbox: boolean;
  /** What falls short of the limits' promise here (said at start), e.g. memory limited per process where no cgroups can be made. */
  readonly warning?: string;
};

/** Makes sandboxes of one kind. */
export interface SandboxProvider {
  describe(): SandboxDescription;
  open(spec: SandboxSpec): Promise<Sandbox>;
  /**
   * Checks that this kind runs here and actually isolates: a sandboxed process must not see the
   * service's environment, files outside its workspace or the host's loopback. Throws a
   * SandboxError saying what to install or configure.
   */
  selfTest(): Promise<void>;
  /** The workspace is being deleted (its sandbox closed): what the provider holds of it (its filesystem) goes too. */
  releaseWorkspace?(workspace: string): Promise<void>;
}
