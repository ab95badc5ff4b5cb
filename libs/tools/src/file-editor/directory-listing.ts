import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';

const MAX_ENTRIES = 500;

async function entries(directory: string): Promise<Dirent[]> {
  try {
    const found = await readdir(directory, { withFileTypes: true });
    return found.filter((entry) => !entry.name.startsWith('.')).sort((a, b) => a.name.localeCompare(b.name));
  } catch {
    return [];
  }
}

/** Files and directories up to two levels below `directory`, hidden ones excluded. */
export async function listDirectory(directory: string): Promise<string> {
  const lines: string[] = [];
  let truncated = false;
  const walk = async (current: string, depth: number): Promise<void> => {
    for (const entry of await entries(current)) {
      if (lines.length >= MAX_ENTRIES) {
        truncated = true;
        return;
      }
      const full = path.join(current, entry.name);
      lines.push(entry.isDirectory() ? `${full}/` : full);
      if (entry.isDirectory() && depth < 2) await walk(full, depth + 1);
    }
  };
  await walk(directory, 1);
  const header = `Files and directories up to 2 levels deep in ${directory}, excluding hidden items:`;
  const footer = truncated
    ? `\n[Listing stopped at ${MAX_ENTRIES} entries; view a subdirectory or use the glob tool.]`
    : '';
  return `${header}\n${directory}/\n${lines.join('\n')}${footer}`;
}
