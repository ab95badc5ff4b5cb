import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HomeInUseError, holderState, lockHome, processStartTime, type HomeLockRecord } from './home-lock.js';

let home: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'flotilla-home-lock-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** The pid of a process that has ended. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

function staleRecord(fields: Partial<HomeLockRecord>): HomeLockRecord {
  return {
    pid: deadPid(),
    processStart: '1',
    host: hostname(),
    since: '2026-01-01T00:00:00.000Z',
    gatewayUrl: 'http://127.0.0.1:9',
    token: 'old',
    ...fields,
  };
}

describe('lockHome', () => {
  it('takes a free home (creating it), with a whole owner-only record naming this process', async () => {
    const nested = join(home, 'new', 'home');
    await using lock = await lockHome(nested);
    expect(lock.path).toBe(join(nested, 'launcher.lock'));
    const record = JSON.parse(await readFile(lock.path, 'utf8')) as HomeLockRecord;
    expect(record).toMatchObject({ pid: process.pid, host: hostname(), gatewayUrl: null });
    expect(record.processStart).toBe(await processStartTime(process.pid));
    expect((await stat(lock.path)).mode & 0o777).toBe(0o600);
    // no drafts left beside it
    expect(await readdir(nested)).toEqual(['launcher.lock']);
  });

  it('refuses a second holder while the first runs, naming its pid and gateway, and leaves its lock as it was', async () => {
    await using first = await lockHome(home);
    await first.setGatewayUrl('http://127.0.0.1:8080');
    const before = await readFile(first.path);
    const refusal = await lockHome(home).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(HomeInUseError);
    expect((refusal as Error).message).toBe(
      `${home} is in use by launcher pid ${process.pid} (gateway http://127.0.0.1:8080; since ${first.record.since}): one system per home. Use that one, stop it (Ctrl-C where it runs, or kill ${process.pid}), or give this one another home with FLOTILLA_HOME`,
    );
    expect(await readFile(first.path)).toEqual(before);
    expect(await readdir(home)).toEqual(['launcher.lock']);
  });

  it('is free again once released, and a release removes only its own lock', async () => {
    const first = await lockHome(home);
    await first.release();
    await expect(stat(first.path)).rejects.toThrow(/ENOENT/);
    const second = await lockHome(home);
    // the first's second release (a stop after a stop) does not remove the second's lock
    await first.release();
    expect((JSON.parse(await readFile(second.path, 'utf8')) as HomeLockRecord).token).toBe(second.record.token);
    await second.release();
  });

  it('takes over a stale lock whose process is gone', async () => {
    const path = join(home, 'launcher.lock');
    const stale = staleRecord({});
    expect(await holderState(stale)).toBe('gone');
    await writeFile(path, JSON.stringify(stale));
    await using lock = await lockHome(home);
    expect(lock.record.pid).toBe(process.pid);
    expect((JSON.parse(await readFile(path, 'utf8')) as HomeLockRecord).token).toBe(lock.record.token);
    expect((await readdir(home)).sort()).toEqual(['launcher.lock']);
  });

  it('takes over a lock whose pid now belongs to another process (started at another time)', async () => {
    const path = join(home, 'launcher.lock');
    // this process is alive, but was not the one that wrote the lock: its start time differs
    const reused = staleRecord({ pid: process.pid, processStart: '1' });
    expect(await holderState(reused)).toBe(process.platform === 'linux' ? 'gone' : 'running');
    if (process.platform !== 'linux') return;
    await writeFile(path, JSON.stringify(reused));
    await using lock = await lockHome(home);
    expect(lock.record.token).not.toBe('old');
  });

  it('never takes over another host’s lock, and says how to free it', async () => {
    const path = join(home, 'launcher.lock');
    await writeFile(path, JSON.stringify(staleRecord({ host: 'elsewhere' })));
    await expect(lockHome(home)).rejects.toThrow(
      /in use by launcher pid \d+ on host elsewhere .*if that launcher is gone, delete .*launcher\.lock/,
    );
  });

  it('refuses a lock file it cannot read, naming it', async () => {
    await writeFile(join(home, 'launcher.lock'), 'garbage');
    await expect(lockHome(home)).rejects.toThrow(
      `${join(home, 'launcher.lock')} is not a launcher lock this version can read`,
    );
  });

  it('gives a stale lock to exactly one of several taking it over at once', async () => {
    await writeFile(join(home, 'launcher.lock'), JSON.stringify(staleRecord({})));
    const attempts = await Promise.allSettled(Array.from({ length: 12 }, () => lockHome(home)));
    const taken = attempts.filter((attempt) => attempt.status === 'fulfilled');
    expect(taken).toHaveLength(1);
    for (const attempt of attempts)
      if (attempt.status === 'rejected') expect(attempt.reason).toBeInstanceOf(HomeInUseError);
    const holder = (taken[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof lockHome>>>).value;
    expect((JSON.parse(await readFile(join(home, 'launcher.lock'), 'utf8')) as HomeLockRecord).token).toBe(
      holder.record.token,
    );
    await holder.release();
    expect(await readdir(home)).toEqual([]);
  });
});
