import { randomBytes } from 'node:crypto';

/** A name unique to this run, safe as a NATS stream, bucket or subject token. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}
