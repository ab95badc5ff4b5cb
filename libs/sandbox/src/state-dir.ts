import { mkdir, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';

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
 * host that are no longer running are removed, so restarts leave nothing behind, but for what is
 * still mounted in them (a self-test's workspace filesystem, when its process was killed).
 */
export async function sandboxStateDir(root: string): Promise<string> {
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_');
  await mkdir(root, { recursive: true });
  for (const name of await readdir(root)) {
    const match = new RegExp(`^${host.replace(/[.]/g, '\\.')}-(\\d+)$`).exec(name);
    // one a process killed mid-self-test left with its workspace filesystem mounted cannot go
    // (EBUSY): it stays, and this process starts all the same
    if (match && (Number(match[1]) === process.pid || !alive(Number(match[1]))))
      await rm(path.join(root, name), { recursive: true, force: true }).catch(() => undefined);
  }
  const directory = path.join(root, `${host}-${process.pid}`);
  await mkdir(directory, { recursive: true });
  return directory;
}
