import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNoneProvider } from './none/none-provider.js';
import { openSandboxProvider } from './open-provider.js';
import { probeSandbox, runSelfTest } from './self-test.js';
import { DEFAULT_SANDBOX_SETTINGS, loadSandboxSettings } from './settings.js';

describe('the start-up self-test', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'flotilla-self-test-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('passes for bwrap: nothing of the service is seen or reached', async () => {
    const provider = await openSandboxProvider(
      { ...DEFAULT_SANDBOX_SETTINGS, kind: 'bwrap' },
      { stateDir: path.join(root, 'bwrap'), ownedRoot: root },
    );
    expect(provider.describe()).toMatchObject({ kind: 'bwrap', isolated: true });
  });

  it('sees the leaks of a kind that does not isolate, and refuses it as isolating', async () => {
    const provider = createNoneProvider(DEFAULT_SANDBOX_SETTINGS);
    const report = await probeSandbox(provider, path.join(root, 'none'));
    expect(report).toMatchObject({ outside: 'visible', loopback: 'open', workspace: 'writable' });
    await expect(runSelfTest(provider, path.join(root, 'none'))).rejects.toMatchObject({
      code: 'sandbox_not_isolated',
      message: expect.stringContaining('outside=visible'),
    });
    // as its own kind, none passes its (smaller) self-test: it is an explicit opt-in
    await expect(provider.selfTest()).resolves.toBeUndefined();
  });

  it('settings name the variable that is wrong', () => {
    expect(() => loadSandboxSettings({ FLOTILLA_SANDBOX: 'chroot' })).toThrow(/FLOTILLA_SANDBOX:/);
    expect(() => loadSandboxSettings({ FLOTILLA_SANDBOX_MAX_PROCESSES: 'many' })).toThrow(
      /FLOTILLA_SANDBOX_MAX_PROCESSES/,
    );
    expect(loadSandboxSettings({ FLOTILLA_SANDBOX_NETWORK: 'egress', FLOTILLA_SANDBOX_DISK_MB: '64' })).toMatchObject({
      network: 'egress',
      limits: { workspaceBytes: 64 * 1024 * 1024 },
    });
  });
});
