import { mkdir, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { unmountWorkspacesUnder } from './workspace-disk.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * This process's directory for what its sandboxes need (`<root>/<host>-<pid>`: the prepared
 * /etc, spare FIFOs, self-test scratch), made fresh. The directories of earlier processes of this
 * host that are no longer running are removed, so restarts leave nothing behind: what is still
 * mounted in one (a self-test's workspace filesystem, when its process was killed) is unmounted
 * first. One that still cannot go (no right to unmount here) stays, and this process starts.
 */
export async function sandboxStateDir(root: string): Promise<string> {
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
  await mkdir(root, { recursive: true });
  for (const name of await readdir(root)) {
    const match = new RegExp(`^${host.replace(/[.]/g, '\\.')}-(\\d+)$`).exec(name);
    if (match && (Number(match[1]) === process.pid || !alive(Number(match[1])))) {
      const stale = path.join(root, name);
      await unmountWorkspacesUnder(stale);
      await rm(stale, { recursive: true, force: true }).catch(() => undefined);
    }
  }
  const directory = path.join(root, `${host}-${process.pid}`);
  await mkdir(directory, { recursive: true });
  return directory;
}
