import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  DEFAULT_SANDBOX_SETTINGS,
  detectCgroups,
  openSandboxProvider,
  unmountWorkspacesUnder,
} from '@flotilla/sandbox';
import { describe, expect, it } from 'vitest';
import { createToolContext } from '../core/context.js';
import { resultText } from '../core/result.js';
import { openWorkspace } from '../core/workspace.js';
import { createTerminalTool } from './terminal-tool.js';

const MiB = 1024 * 1024;
const cgroups = await detectCgroups();
if (cgroups.kind === 'none')
  console.warn(`terminal memory test SKIPPED: this machine gives no cgroups to make (${cgroups.reason})`);

describe.skipIf(cgroups.kind === 'none')('the terminal in a sandbox past its memory', () => {
  it('tells the agent the kernel killed a process for the sandbox’s memory, and the shell goes on', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-terminal-memory-'));
    const terminal = createTerminalTool({ softTimeoutSeconds: 5, interruptGraceSeconds: 1 });
    try {
      const workspace = path.join(root, 'workspace');
      await mkdir(workspace, { recursive: true });
      const settings = {
        ...DEFAULT_SANDBOX_SETTINGS,
        limits: { ...DEFAULT_SANDBOX_SETTINGS.limits, memoryBytes: 256 * MiB },
      };
      const provider = await openSandboxProvider(settings, {
        stateDir: path.join(root, 'state'),
        ownedRoot: root,
        skipSelfTest: true,
      });
      const sandbox = await provider.open({ id: 'acme.memory', workspace });
      const context = createToolContext({
        workspace: await openWorkspace(workspace),
        conversationId: 'acme.memory',
        sandbox,
      });
      const run = async (command: string) =>
        resultText(await terminal.execute({ command, is_input: false, reset: false, timeout: 60 }, context));
      const hogs = await run(
        'for i in 1 2 3 4; do (head -c 100M /dev/zero | tail > /dev/null) & done; wait; echo waited',
      );
      expect(hogs).toMatch(
        /\[The sandbox ran out of memory \(its limit holds all its processes together\), so the kernel killed (a process|\d+ processes) in it\./,
      );
      const after = await run('echo still here');
      expect(after).toContain('still here');
      expect(after).not.toContain('ran out of memory');
      await sandbox.close();
    } finally {
      await terminal.close?.();
      // the workspace is a filesystem of its own where the test runs as root: mounts outlive their sandbox
      await unmountWorkspacesUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the terminal in a sandbox past its file-size limit', () => {
  it('shows the command’s own error (File too large), not a silent kill', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'flotilla-terminal-fsize-'));
    const terminal = createTerminalTool({ softTimeoutSeconds: 5, interruptGraceSeconds: 1 });
    try {
      const workspace = path.join(root, 'workspace');
      await mkdir(workspace, { recursive: true });
      const settings = {
        ...DEFAULT_SANDBOX_SETTINGS,
        limits: { ...DEFAULT_SANDBOX_SETTINGS.limits, fileBytes: 4 * MiB },
      };
      const provider = await openSandboxProvider(settings, {
        stateDir: path.join(root, 'state'),
        ownedRoot: root,
        skipSelfTest: true,
      });
      const sandbox = await provider.open({ id: 'acme.fsize', workspace });
      const context = createToolContext({
        workspace: await openWorkspace(workspace),
        conversationId: 'acme.fsize',
        sandbox,
      });
      const text = resultText(
        await terminal.execute(
          { command: 'dd if=/dev/zero of=big bs=1M count=8', is_input: false, reset: false, timeout: 30 },
          context,
        ),
      );
      expect(text).toMatch(/dd: error writing 'big': File too large/);
      await sandbox.close();
    } finally {
      await terminal.close?.();
      // the workspace is a filesystem of its own where the test runs as root: mounts outlive their sandbox
      await unmountWorkspacesUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  }, 60_000);
});
