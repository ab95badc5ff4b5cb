import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServiceProcess } from './service-process.js';
import { BACKGROUND_NICENESS, backgroundServices, serviceNiceness } from './service-priority.js';

describe('ServiceProcess', () => {
  it('restarts a process that keeps failing at start with growing delays, then gives up with its last lines', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-supervisor-'));
    try {
      const entry = join(dir, 'crash.mjs');
      await writeFile(entry, "console.error('Error: invalid settings: FLOTILLA_X: bad'); process.exit(1);\n");
      const exits: number[] = [];
      let gaveUp!: (lines: readonly string[]) => void;
      const givenUp = new Promise<readonly string[]>((resolve) => (gaveUp = resolve));
      const child = new ServiceProcess({
        name: 'crasher',
        entry,
        maxQuickRestarts: 3,
        onExit: () => exits.push(Date.now()),
        onGiveUp: (_name, lines) => gaveUp(lines),
      });
      child.start();
      const lines = await givenUp;
      expect(lines).toContain('Error: invalid settings: FLOTILLA_X: bad');
      expect(child.unexpectedExits.map((exit) => exit.code)).toEqual([1, 1, 1, 1]);
      expect(exits).toHaveLength(4); // the first start and 3 restarts
      const gaps = exits.slice(1).map((at, index) => at - exits[index]!);
      expect(gaps[2]!).toBeGreaterThan(gaps[0]!); // the delays grow
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(exits).toHaveLength(4); // and no more restarts
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('keeps restarting a process that is killed by a signal (a crash, not bad settings)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-supervisor-'));
    try {
      const entry = join(dir, 'long.mjs');
      await writeFile(entry, 'setInterval(() => {}, 1000);\n');
      const child = new ServiceProcess({ name: 'long', entry, maxQuickRestarts: 1 });
      child.start();
      for (let kill = 0; kill < 3; kill += 1) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await child.kill('SIGKILL');
      }
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(child.gaveUp).toBe(false);
      expect(child.running).toBe(true);
      expect(child.unexpectedExits.map((exit) => exit.signal)).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL']);
      await child.stop();
      expect(child.unexpectedExits).toHaveLength(3); // a stop asked for is not one of them
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('starts a process at the niceness asked for, and again after a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flotilla-supervisor-'));
    try {
      const entry = join(dir, 'long.mjs');
      await writeFile(entry, 'setInterval(() => {}, 1000);\n');
      const child = new ServiceProcess({ name: 'background', entry, niceness: BACKGROUND_NICENESS });
      child.start();
      expect(getPriority(child.pid!)).toBe(getPriority() + BACKGROUND_NICENESS);
      const first = child.pid;
      await child.kill('SIGKILL');
      for (let waited = 0; (child.pid === first || !child.running) && waited < 5_000; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(child.pid).not.toBe(first);
      expect(getPriority(child.pid!)).toBe(getPriority() + BACKGROUND_NICENESS);
      await child.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('runs the services off the step path (and only those) as background', () => {
    expect([...backgroundServices()].sort()).toEqual(['condenser', 'pg-sink', 'projector', 'webhooks']);
    for (const service of ['gateway', 'step-worker', 'tool-runner', 'delegator'])
      expect(serviceNiceness(service)).toBe(0);
    for (const service of backgroundServices()) expect(serviceNiceness(service)).toBe(BACKGROUND_NICENESS);
  });
});
