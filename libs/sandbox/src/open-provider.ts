import { createBwrapProvider } from './bwrap/bwrap-provider.js';
import { detectCgroups } from './cgroups.js';
import { createNoneProvider } from './none/none-provider.js';
import type { SandboxProvider } from './sandbox.js';
import { SandboxKind, type SandboxSettings } from './settings.js';

export type OpenSandboxProviderOptions = {
  /** A directory of the service's own for what the sandboxes need (generated /etc files, self-test scratch). */
  readonly stateDir: string;
  /** The service's home: folders in it on the way to a workspace may be made traversable (see BwrapProviderOptions). */
  readonly ownedRoot?: string;
  /** Skip the self-test (tests that make many providers); never in a service. */
  readonly skipSelfTest?: boolean;
};

/**
 * The provider of the configured kind, after its self-test proved that it runs here and
 * isolates. Throws a SandboxError saying what to install or configure otherwise.
 */
export async function openSandboxProvider(settings: SandboxSettings, options: OpenSandboxProviderOptions): Promise<SandboxProvider> {
  const provider = await providerOf(settings, options);
  if (!options.skipSelfTest) await provider.selfTest();
  return provider;
}

async function providerOf(settings: SandboxSettings, options: OpenSandboxProviderOptions): Promise<SandboxProvider> {
  switch (settings.kind) {
    case SandboxKind.Bwrap:
      return createBwrapProvider(settings, { stateDir: options.stateDir, cgroups: await detectCgroups(), ...(options.ownedRoot === undefined ? {} : { ownedRoot: options.ownedRoot }) });
    case SandboxKind.None:
      return createNoneProvider(settings);
    case SandboxKind.Docker: {
      const { createDockerProvider } = await import('./docker/docker-provider.js');
      return createDockerProvider(settings, { stateDir: options.stateDir });
    }
  }
}
