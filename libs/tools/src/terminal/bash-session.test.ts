import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openHostSandbox } from '@flotilla/sandbox';
import { describe, expect, it } from 'vitest';
import { BashSession } from './bash-session.js';

const HOLDER = fileURLToPath(new URL('./test-support/hold-session.ts', import.meta.url));
const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('a shell session', () => {
  it.each(['none', 'bwrap'])(
    'dies with the process that owns it, even by SIGKILL: a cut-off command never finishes behind its back (sandbox %s)',
    async (kind) => {
      const parent = await mkdtemp(path.join(os.tmpdir(), 'flotilla-lifeline-'));
      const directory = path.join(parent, 'workspace');
      await mkdir(directory);
      try {
        const holder = spawn(process.execPath, ['--import', 'tsx', HOLDER, directory, kind], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        await new Promise<void>((resolve, reject) => {
          holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('running') && resolve());
          holder.once('exit', (code) => reject(new Error(`the holder exited early (${code})`)));
        });
        holder.kill('SIGKILL');
        await delay(3_000); // the command would have written its effect after 2 s
        expect(existsSync(path.join(directory, 'effect.txt'))).toBe(false);
      } finally {
        await rm(parent, { recursive: true, force: true });
      }
    },
    20_000,
  );

  it('`wait` in a command does not wait for the lifeline watcher', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'flotilla-wait-'));
    const session = await BashSession.start({
      sandbox: openHostSandbox({ id: 'wait', workspace: directory }),
      cwd: directory,
      bufferCapacity: 10_000,
    });
    try {
      await session.run('sleep 0.2 & wait; echo waited');
      const deadline = Date.now() + 5_000;
      let output = '';
      for (;;) {
        const collected = await session.collect();
        output += collected.output;
        if (collected.completed) break;
        if (Date.now() > deadline) throw new Error(`wait hung: ${output}`);
        await session.waitForChange(100);
      }
      expect(output).toContain('waited');
    } finally {
      await session.close();
      await rm(directory, { recursive: true, force: true });
    }
  });
});
