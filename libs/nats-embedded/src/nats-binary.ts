import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Finds `nats-server` on PATH (or NATS_SERVER_BIN), or returns undefined. */
export function findNatsServerBinary(): string | undefined {
  const explicit = process.env['NATS_SERVER_BIN'];
  if (explicit) return explicit;
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/usr/local/bin', '/usr/local/sbin']);
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, 'nats-server');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
