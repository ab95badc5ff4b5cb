import { createBwrapProvider } from './bwrap/bwrap-provider.js';
import { detectCgroups, sweepIdleCgroups } from './cgroups.js';
import { createNoneProvider } from './none/none-provider.js';
import type { SandboxProvider } from './sandbox.js';
import { SandboxKind, type SandboxSettings } from './settings.js';
import { detectWorkspaceDisks } from './workspace-disk.js';

/** How long ago an empty sandbox cgroup must have been made before a starting tool runner removes it. */
const IDLE_CGROUP_SWEEP_MS = 60_000;

export type OpenSandboxProviderOptions = {
  /** A directory of the service's own for what the sandboxes need (generated /etc files, self-test scratch). */
  readonly stateDir: string;
  /** The service's home: folders in it on the way to a workspace may be made traversable (see BwrapProviderOptions). */
  readonly ownedRoot?: string;
  /** The workspaces' root, where workspace filesystems are made ahead (WorkspaceDisksOptions.workspaces). */
  readonly workspaces?: string;
  /** Skip the self-test (tests that make many providers); never in a service. */
  readonly skipSelfTest?: boolean;
};

/**
 * The provider of the configured kind, after its self-test proved that it runs here and
 * isolates. Throws a SandboxError saying what to install or configure otherwise.
 */
export async function openSandboxProvider(
  settings: SandboxSettings,
  options: OpenSandboxProviderOptions,
): Promise<SandboxProvider> {
  const provider = await providerOf(settings, options);
  if (!options.skipSelfTest) await provider.selfTest();
  return provider;
}

async function providerOf(settings: SandboxSettings, options: OpenSandboxProviderOptions): Promise<SandboxProvider> {
  switch (settings.kind) {
    case SandboxKind.Bwrap: {
      const cgroups = await detectCgroups();
      // empty cgroups a runner killed before closing its sandboxes left (a minute old at least: a sibling runner's being made is younger)
      await sweepIdleCgroups(cgroups, IDLE_CGROUP_SWEEP_MS);
      const owner = { uid: settings.uid, gid: settings.gid };
      const disks = await detectWorkspaceDisks(settings.diskLimit, options.stateDir, {
        bytes: settings.limits.workspaceBytes,
        owner,
        ...(options.workspaces === undefined ? {} : { workspaces: options.workspaces }),
      });
      return createBwrapProvider(settings, {
        stateDir: options.stateDir,
        cgroups,
        disks,
        ...(options.ownedRoot === undefined ? {} : { ownedRoot: options.ownedRoot }),
      });
    }
    case SandboxKind.None:
      return createNoneProvider(settings);
    case SandboxKind.Docker: {
      const { createDockerProvider } = await import('./docker/docker-provider.js');
      return createDockerProvider(settings, { stateDir: options.stateDir });
    }
  }
}
