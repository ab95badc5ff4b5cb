export { SandboxError, SandboxErrorCode, isSandboxError } from './errors.js';
export type { SandboxErrorOptions } from './errors.js';
export {
  DEFAULT_SANDBOX_SETTINGS,
  loadSandboxSettings,
  NetworkMode,
  SandboxKind,
  SandboxLimits,
  SandboxSettings,
} from './settings.js';
export type {
  ProcessExit,
  Sandbox,
  SandboxDescription,
  SandboxProcess,
  SandboxProvider,
  SandboxSpec,
  SpawnOptions,
} from './sandbox.js';
export { SANDBOX_HOME, SANDBOX_PATH, SANDBOX_PRIVATE, SANDBOX_WORKSPACE, sandboxEnvironment } from './environment.js';
export { openSandboxProvider } from './open-provider.js';
export type { OpenSandboxProviderOptions } from './open-provider.js';
export { createBwrapProvider } from './bwrap/bwrap-provider.js';
export type { BwrapProviderOptions } from './bwrap/bwrap-provider.js';
export { createNoneProvider, openHostSandbox } from './none/none-provider.js';
export { probeSandbox, runSelfTest } from './self-test.js';
export type { ProbeReport } from './self-test.js';
export { RestartReason, SandboxPool } from './sandbox-pool.js';
export type { Acquired, SandboxPoolOptions } from './sandbox-pool.js';
export { formatBytes, workspaceUsage } from './workspace-usage.js';
export { sandboxStateDir } from './state-dir.js';
export type { UsageBudget, WorkspaceUsage } from './workspace-usage.js';
export { detectCgroups, SandboxCgroup, type CgroupSupport } from './cgroups.js';
export {
  detectWorkspaceDisks,
  DiskLimit,
  unmountWorkspacesUnder,
  WorkspaceDisks,
  type DiskSupport,
  type WorkspaceDiskKind,
  type WorkspaceDisksOptions,
} from './workspace-disk.js';
