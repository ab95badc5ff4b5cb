import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

export type WorkspaceUsage = {
  /** Bytes the files take on disk (allocated blocks, so sparse files count what they use). */
  readonly bytes: number;
  /** False when the walk stopped at its entry or time budget: `bytes` is then a lower bound. */
  readonly complete: boolean;
};

export type UsageBudget = {
  readonly maxEntries?: number;
  readonly deadlineMs?: number;
  readonly stopAboveBytes?: number;
};

/**
 * Disk used below `root`, never following symlinks, bounded in entries and time so that a huge
 * tree cannot stall the caller (it yields between directories). Stops early once past
 * `stopAboveBytes`: a quota check needs to know only that it is over.
 */
export async function workspaceUsage(root: string, budget: UsageBudget = {}): Promise<WorkspaceUsage> {
  const maxEntries = budget.maxEntries ?? 200_000;
  const deadline = Date.now() + (budget.deadlineMs ?? 2_000);
  let bytes = 0;
  let entries = 0;
  const pending = [root];
  while (pending.length > 0) {
    if (entries >= maxEntries || Date.now() > deadline) return { bytes, complete: false };
    if (budget.stopAboveBytes !== undefined && bytes > budget.stopAboveBytes) return { bytes, complete: false };
    const directory = pending.pop() as string;
    let names: string[];
    try {
      names = await readdir(directory);
    } catch {
      continue;
    }
    const infos = await Promise.all(
      names.map((name) =>
        lstat(path.join(directory, name)).then(
          (info) => ({ name, info }),
          () => undefined,
        ),
      ),
    );
    for (const entry of infos) {
      if (entry === undefined) continue;
      entries += 1;
      bytes += entry.info.blocks * 512;
      if (entry.info.isDirectory()) pending.push(path.join(directory, entry.name));
    }
  }
  return { bytes, complete: true };
}

/** A readable size, never rounded to nothing: 5.0 GiB, 312 MiB, 100 KiB, 17 bytes. */
export function formatBytes(bytes: number): string {
  const KiB = 1024;
  const MiB = 1024 * KiB;
  if (bytes >= 1024 * MiB) return `${(bytes / (1024 * MiB)).toFixed(1)} GiB`;
  if (bytes >= MiB) return `${Math.round(bytes / MiB)} MiB`;
  if (bytes >= KiB) return `${Math.round(bytes / KiB)} KiB`;
  return `${bytes} byte${bytes === 1 ? '' : 's'}`;
}
