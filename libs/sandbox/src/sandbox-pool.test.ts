import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNoneProvider } from './none/none-provider.js';
import { RestartReason, SandboxPool } from './sandbox-pool.js';
import { DEFAULT_SANDBOX_SETTINGS } from './settings.js';

describe('SandboxPool', () => {
  let workspace: string;
  beforeAll(async () => {
    workspace = await mkdtemp(path.join(tmpdir(), 'flotilla-pool-'));
  });
  afterAll(async () => {
    await rm(workspace, { recursive: true, force: true });
  });

  it('reuses a sandbox while its environment is the same, replaces it when the environment changed, and says why', async () => {
    const pool = new SandboxPool(createNoneProvider(DEFAULT_SANDBOX_SETTINGS), { idleStopMs: 60_000 });
    const spec = { id: 'c1', workspace, env: { TOKEN: 'one1' } };
    const first = await pool.use(spec, async (acquired) => acquired);
    const again = await pool.use(spec, async (acquired) => acquired);
    expect(again.sandbox).toBe(first.sandbox);
    expect(again.restarted).toBeUndefined();
    // a shell in it: replacing it loses the shell, and the next use is told why
    const shell = await first.sandbox.spawn('sleep', ['30']);
    const changed = await pool.use({ ...spec, env: { TOKEN: 'two2' } }, async (acquired) => acquired);
    expect(changed.sandbox).not.toBe(first.sandbox);
    expect(changed.restarted).toBe(RestartReason.Environment);
    expect(await shell.exited).toMatchObject({ signal: 'SIGKILL' });
    // one that never ran anything lost nothing: replaced without a word
    const quiet = await pool.use({ ...spec, env: { TOKEN: 'three3' } }, async (acquired) => acquired);
    expect(quiet.sandbox).not.toBe(changed.sandbox);
    expect(quiet.restarted).toBeUndefined();
    await pool.closeAll();
  });

  it('counts only sandboxes that hold something toward its bound: thousands of conversations that never ran a process are never stopped for room', async () => {
    const pool = new SandboxPool(createNoneProvider(DEFAULT_SANDBOX_SETTINGS), { idleStopMs: 60_000, maxOpen: 2 });
    const quiet = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        pool.use({ id: `quiet-${index}`, workspace }, async ({ sandbox }) => sandbox),
      ),
    );
    expect(pool.size).toBe(20);
    const shells = [];
    for (const id of ['busy-1', 'busy-2', 'busy-3'])
      shells.push(await pool.use({ id, workspace }, async ({ sandbox }) => sandbox.spawn('sleep', ['30'])));
    // the third shell's sandbox stopped the least recently used one that held a shell; the quiet ones stay
    await pool.use({ id: 'busy-4', workspace }, async () => undefined);
    expect(await shells[0]!.exited).toMatchObject({ signal: 'SIGKILL' });
    expect(pool.size).toBe(20 + 3);
    for (const [index, sandbox] of quiet.entries())
      expect((await pool.use({ id: `quiet-${index}`, workspace }, async (acquired) => acquired)).sandbox).toBe(sandbox);
    expect((await pool.use({ id: 'busy-1', workspace }, async (acquired) => acquired)).restarted).toBe(
      RestartReason.Idle,
    );
    await pool.closeAll();
  });

  it('stops an idle sandbox, never one in use, and the next use says it was stopped', async () => {
    const pool = new SandboxPool(createNoneProvider(DEFAULT_SANDBOX_SETTINGS), { idleStopMs: 1_000 });
    const spec = { id: 'c2', workspace };
    const during = await pool.use(spec, async () => {
      await pool.sweep(Date.now() + 10_000);
      return pool.size;
    });
    expect(during).toBe(1);
    const shell = await pool.use(spec, async ({ sandbox }) => sandbox.spawn('sleep', ['30']));
    await pool.sweep(Date.now() + 10_000);
    expect(pool.size).toBe(0);
    expect(await shell.exited).toMatchObject({ signal: 'SIGKILL' });
    const next = await pool.use(spec, async (acquired) => acquired);
    expect(next.restarted).toBe(RestartReason.Idle);
    await pool.remove('c2');
    const fresh = await pool.use(spec, async (acquired) => acquired);
    expect(fresh.restarted).toBeUndefined();
    await pool.closeAll();
  });
});
