import { z } from 'zod';
import { SandboxError, SandboxErrorCode } from './errors.js';
import { DiskLimit } from './workspace-disk.js';

/** How a conversation's processes are isolated. */
export const SandboxKind = { Bwrap: 'bwrap', Docker: 'docker', None: 'none' } as const;
export type SandboxKind = (typeof SandboxKind)[keyof typeof SandboxKind];

/**
 * What a sandbox may reach on the network. `none`: nothing but its own loopback. `egress`: the
 * outside world through a user-mode network stack (slirp4netns), never the host's loopback.
 */
export const NetworkMode = { None: 'none', Egress: 'egress' } as const;
export type NetworkMode = (typeof NetworkMode)[keyof typeof NetworkMode];

const MiB = 1024 * 1024;

export const SandboxLimits = z.strictObject({
  /** Processes (and threads) at once inside one sandbox. */
  processes: z.number().int().min(8).max(100_000),
  /** Memory: per process (address space) under rlimits, for the whole sandbox under cgroups or Docker. */
  memoryBytes: z
    .number()
    .int()
    .min(64 * MiB),
  /** CPU seconds one process may use. */
  cpuSeconds: z.number().int().min(1),
  /** CPUs the whole sandbox may keep busy at once (under cgroups or Docker; 1.5 = one and a half). */
  cpus: z.number().min(0.01).max(1_024),
  /** Largest file a process may write. */
  fileBytes: z.number().int().min(MiB),
  /** The workspace's size quota. */
  workspaceBytes: z.number().int().min(MiB),
  /** Size of the private /tmp (memory-backed). */
  tmpBytes: z.number().int().min(MiB),
});
export type SandboxLimits = z.infer<typeof SandboxLimits>;

export const SandboxSettings = z.strictObject({
  kind: z.enum([SandboxKind.Bwrap, SandboxKind.Docker, SandboxKind.None]),
  network: z.enum([NetworkMode.None, NetworkMode.Egress]),
  limits: SandboxLimits,
  /** How the workspace's quota is held (DiskLimit): a filesystem per workspace where the tool runner may mount one, or a check from outside. */
  diskLimit: z.enum([DiskLimit.Auto, DiskLimit.Filesystem, DiskLimit.Check]),
  /** Host uid and gid sandboxed processes run as when the service runs as root (never root itself). */
  uid: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31),
  gid: z
    .number()
    .int()
    .min(1)
    .max(2 ** 31),
  /** An idle sandbox (no command for this long) is stopped; the next action starts it again. */
  idleStopMs: z.number().int().min(1_000),
  /** Image of the `docker` kind's containers. */
  image: z.string().min(1),
  /** Host paths seen read-only inside besides the system (`/usr` and a few files of `/etc`). */
  readOnlyPaths: z.array(z.string().startsWith('/')),
});
export type SandboxSettings = z.infer<typeof SandboxSettings>;

export const DEFAULT_SANDBOX_SETTINGS: SandboxSettings = {
  kind: SandboxKind.Bwrap,
  network: NetworkMode.None,
  limits: {
    processes: 256,
    memoryBytes: 2048 * MiB,
    cpuSeconds: 3_600,
    cpus: 1,
    fileBytes: 1024 * MiB,
    workspaceBytes: 5120 * MiB,
    tmpBytes: 256 * MiB,
  },
  diskLimit: DiskLimit.Auto,
  uid: 65_534,
  gid: 65_534,
  idleStopMs: 15 * 60_000,
  image: 'debian:bookworm-slim',
  readOnlyPaths: [],
};

/** Each setting's variable, and how its text becomes a value. */
const VARIABLES = {
  FLOTILLA_SANDBOX: { path: ['kind'], parse: (text: string) => text },
  FLOTILLA_SANDBOX_NETWORK: { path: ['network'], parse: (text: string) => text },
  FLOTILLA_SANDBOX_MAX_PROCESSES: { path: ['limits', 'processes'], parse: Number },
  FLOTILLA_SANDBOX_MEMORY_MB: { path: ['limits', 'memoryBytes'], parse: (text: string) => Number(text) * MiB },
  FLOTILLA_SANDBOX_CPU_SECONDS: { path: ['limits', 'cpuSeconds'], parse: Number },
  FLOTILLA_SANDBOX_CPUS: { path: ['limits', 'cpus'], parse: Number },
  FLOTILLA_SANDBOX_FILE_MB: { path: ['limits', 'fileBytes'], parse: (text: string) => Number(text) * MiB },
  FLOTILLA_SANDBOX_DISK_MB: { path: ['limits', 'workspaceBytes'], parse: (text: string) => Number(text) * MiB },
  FLOTILLA_SANDBOX_DISK_LIMIT: { path: ['diskLimit'], parse: (text: string) => text },
  FLOTILLA_SANDBOX_TMP_MB: { path: ['limits', 'tmpBytes'], parse: (text: string) => Number(text) * MiB },
  FLOTILLA_SANDBOX_UID: { path: ['uid'], parse: Number },
  FLOTILLA_SANDBOX_GID: { path: ['gid'], parse: Number },
  FLOTILLA_SANDBOX_IDLE_SECONDS: { path: ['idleStopMs'], parse: (text: string) => Number(text) * 1_000 },
  FLOTILLA_SANDBOX_IMAGE: { path: ['image'], parse: (text: string) => text },
  FLOTILLA_SANDBOX_RO_PATHS: {
    path: ['readOnlyPaths'],
    parse: (text: string) =>
      text
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean),
  },
} as const;

/** The sandbox settings from `FLOTILLA_SANDBOX*` variables over the defaults; a bad value names its variable. */
export function loadSandboxSettings(environment: NodeJS.ProcessEnv = process.env): SandboxSettings {
  const raw = structuredClone(DEFAULT_SANDBOX_SETTINGS) as unknown as Record<string, unknown>;
  for (const [variable, { path, parse }] of Object.entries(VARIABLES)) {
    const text = environment[variable];
    if (text === undefined || text === '') continue;
    let target = raw;
    for (const segment of path.slice(0, -1)) target = target[segment] as Record<string, unknown>;
    target[path[path.length - 1]!] = parse(text);
  }
  const result = SandboxSettings.safeParse(raw);
  if (result.success) return result.data;
  const variableOf = (path: readonly PropertyKey[]): string =>
    Object.entries(VARIABLES).find(([, spec]) => spec.path.join('.') === path.join('.'))?.[0] ?? path.join('.');
  const problems = result.error.issues.map((issue) => `${variableOf(issue.path)}: ${issue.message}`);
  throw new SandboxError(SandboxErrorCode.InvalidSettings, `invalid sandbox configuration: ${problems.join('; ')}`);
}
