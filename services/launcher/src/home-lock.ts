import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * One launcher per home: `<home>/launcher.lock` names the launcher that owns the home and so its
 * NATS store (`<home>/nats`, `<home>/nats-cluster`), its keys and `cli.json`.
 *
 * Why a file of our own rather than a library: proper-lockfile and lockfile (npm) judge a lock
 * stale by its age, so the holder must keep touching it, a paused or busy launcher loses its home,
 * and neither says who holds it. flock(2) needs a native addon (fs-ext). Here the lock is created
 * whole and exclusively (the record is written to a private file, then hard-linked to the lock's
 * name: link(2) fails when the name exists, so there is never an empty or half-written lock), and
 * it is stale only when its process is gone: `process.kill(pid, 0)` on the same host, and, against
 * a pid reused by another process, the process's start time from /proc/<pid>/stat (Linux) must
 * equal the one recorded. A lock from another host (a home on a shared disk) cannot be judged and
 * is never taken over.
 */
const LOCK_FILE = 'launcher.lock';

export const HomeLockRecord = z.object({
  pid: z.number().int().positive(),
  /** The process's start time in clock ticks after boot (/proc/<pid>/stat field 22); null where there is no /proc. */
  processStart: z.string().nullable(),
  host: z.string(),
  /** When the launcher took the home (ISO 8601). */
  since: z.string(),
  /** The gateway's URL once the launcher has chosen its port. */
  gatewayUrl: z.string().nullable(),
  /** Tells this holder's lock from a later one of the same process (a launch after a stop). */
  token: z.string(),
});
export type HomeLockRecord = z.infer<typeof HomeLockRecord>;

/** The home is held by a running launcher (or one this host cannot judge). */
export class HomeInUseError extends Error {
  readonly code = 'home_in_use';
  constructor(
    message: string,
    readonly holder: HomeLockRecord | undefined,
  ) {
    super(message);
    this.name = 'HomeInUseError';
  }
}

export type HomeLock = AsyncDisposable & {
  readonly path: string;
  readonly record: HomeLockRecord;
  /** Records the gateway's URL in the lock, for a second launcher's message. */
  setGatewayUrl(url: string): Promise<void>;
  /** Removes the lock if it is still this holder's. */
  release(): Promise<void>;
};

/** The start time of a process (field 22 of /proc/<pid>/stat), or null where /proc cannot tell. */
export async function processStartTime(pid: number): Promise<string | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // the command name (field 2) is in parentheses and may hold spaces: count fields after its last ')'
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the launcher that wrote this record may still be running ('unknown' for another host's). */
export async function holderState(record: HomeLockRecord): Promise<'running' | 'gone' | 'unknown'> {
  if (record.host !== hostname()) return 'unknown';
  if (!processExists(record.pid)) return 'gone';
  if (record.processStart === null) return 'running';
  const start = await processStartTime(record.pid);
  // the pid is another process's now (reused after the holder ended)
  return start === null || start === record.processStart ? 'running' : 'gone';
}

async function readRecord(path: string): Promise<HomeLockRecord | 'absent' | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw error;
  }
  try {
    const parsed = HomeLockRecord.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : 'unreadable';
  } catch {
    return 'unreadable';
  }
}

function inUseMessage(home: string, record: HomeLockRecord, state: 'running' | 'unknown'): string {
  const gateway = record.gatewayUrl ? `gateway ${record.gatewayUrl}` : 'still starting, no gateway yet';
  const who = `launcher pid ${record.pid}${state === 'unknown' ? ` on host ${record.host}` : ''} (${gateway}; since ${record.since})`;
  const what =
    state === 'unknown'
      ? `if that launcher is gone, delete ${join(home, LOCK_FILE)}`
      : `stop it (Ctrl-C where it runs, or kill ${record.pid})`;
  return `${home} is in use by ${who}: one system per home. Use that one, ${what}, or give this one another home with FLOTILLA_HOME`;
}

/**
 * Takes the home for this process, or throws HomeInUseError naming the running launcher. Creates
 * the home directory when it is missing and nothing else. A lock whose process is gone is taken over.
 */
export async function lockHome(home: string): Promise<HomeLock> {
  await mkdir(home, { recursive: true });
  const path = join(home, LOCK_FILE);
  let record: HomeLockRecord = {
    pid: process.pid,
    processStart: await processStartTime(process.pid),
    host: hostname(),
    since: new Date().toISOString(),
    gatewayUrl: null,
    token: randomBytes(12).toString('hex'),
  };
  for (let attempt = 0; ; attempt += 1) {
    if (await createExclusively(path, record)) break;
    const existing = await readRecord(path);
    if (existing === 'absent') continue;
    if (existing === 'unreadable')
      throw new HomeInUseError(
        `${path} is not a launcher lock this version can read: if no launcher runs on ${home}, delete it and start again`,
        undefined,
      );
    const state = await holderState(existing);
    if (state !== 'gone') throw new HomeInUseError(inUseMessage(home, existing, state), existing);
    if (attempt >= 100)
      throw new HomeInUseError(
        `could not take over the stale lock ${path} (other launchers are starting on ${home} at the same time): start again`,
        existing,
      );
    if (!(await takeOver(path, existing, record))) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const rewrite = async (next: HomeLockRecord): Promise<void> => {
    // replaced whole (write, then rename over it): a reader never sees it missing or half-written
    const draft = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
    await writeFile(draft, `${JSON.stringify(next)}\n`, { mode: 0o600 });
    await rename(draft, path);
    record = next;
  };
  let released = false;
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    const current = await readRecord(path);
    if (typeof current === 'object' && current.token === record.token) await unlink(path).catch(() => undefined);
  };
  return {
    path,
    get record() {
      return record;
    },
    setGatewayUrl: async (url) => {
      if (!released) await rewrite({ ...record, gatewayUrl: url });
    },
    release,
    [Symbol.asyncDispose]: release,
  };
}

/** Writes the record whole under a private name, then links it to `path`: false when `path` exists. */
async function createExclusively(path: string, record: HomeLockRecord): Promise<boolean> {
  const draft = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(draft, `${JSON.stringify(record)}\n`, { mode: 0o600 });
    await link(draft, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(draft).catch(() => undefined);
  }
}

/**
 * Removes a stale lock, one launcher at a time: the one that creates `<lock>.takeover` (exclusively,
 * like the lock) reads the lock again and removes it only if it is still the stale record judged,
 * so a lock another launcher made meanwhile is never removed. (Moving the stale lock aside and
 * linking back what was not it let a third launcher create a lock in between, and two held the
 * home.) Returns false when another launcher is taking it over: the caller looks again shortly.
 * A takeover whose own launcher is gone is removed first.
 */
async function takeOver(path: string, stale: HomeLockRecord, record: HomeLockRecord): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!(await createExclusively(guard, record))) {
    const holder = await readRecord(guard);
    if (typeof holder === 'object' && (await holderState(holder)) === 'gone') await unlinkIfToken(guard, holder.token);
    return false;
  }
  try {
    await unlinkIfToken(path, stale.token);
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/** Removes the record at `path` if it is still the one with `token` (only the takeover's holder calls this for the lock). */
async function unlinkIfToken(path: string, token: string): Promise<void> {
  const current = await readRecord(path);
  if (typeof current === 'object' && current.token === token) await unlink(path).catch(() => undefined);
}
