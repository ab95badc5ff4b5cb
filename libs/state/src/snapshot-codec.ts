import type { ConversationRef } from '@flotilla/log';
import {
  ConversationSnapshot,
  CURRENT_SNAPSHOT_VERSION,
  SUPPORTED_SNAPSHOT_VERSIONS,
} from './conversation-snapshot.js';
import { StateError, StateErrorCode } from './errors.js';

/** One problem found in a stored snapshot, at a dotted path. */
export type SnapshotIssue = { readonly path: string; readonly message: string };

export type DecodeSnapshotResult =
  | { readonly ok: true; readonly snapshot: ConversationSnapshot }
  | { readonly ok: false; readonly reason: string; readonly issues: readonly SnapshotIssue[] };

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** Validates and serialises a snapshot as JSON; refuses to write an invalid one. */
export function encodeSnapshot(snapshot: ConversationSnapshot): Uint8Array {
  const result = ConversationSnapshot.safeParse(snapshot);
  if (!result.success) {
    const issues = result.error.issues
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new StateError(StateErrorCode.InvalidSnapshot, `refused to store an invalid snapshot: ${issues}`);
  }
  return encoder.encode(JSON.stringify(result.data));
}

/**
 * Reads a stored snapshot. Corrupt bytes, bad JSON, a schema violation, a snapshot of another
 * conversation or of an older version come back as `{ ok: false }` (to be reported and rebuilt);
 * a snapshot of a newer version throws, because rebuilding it with this older build would
 * downgrade it.
 */
export function decodeSnapshot(data: Uint8Array, ref: ConversationRef): DecodeSnapshotResult {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (error) {
    return {
      ok: false,
      reason: `not JSON: ${(error as Error).message}`,
      issues: [{ path: '(root)', message: 'not JSON' }],
    };
  }
  const version = typeof value === 'object' && value !== null ? (value as { v?: unknown }).v : undefined;
  if (typeof version === 'number' && Number.isInteger(version) && version > CURRENT_SNAPSHOT_VERSION) {
    throw new StateError(
      StateErrorCode.UnsupportedVersion,
      `the snapshot of ${ref.tenant}/${ref.conversation} has version ${version}; this build reads ` +
        `${SUPPORTED_SNAPSHOT_VERSIONS.join(', ')}. Upgrade Flotilla to read it.`,
    );
  }
  if (
    typeof version === 'number' &&
    Number.isInteger(version) &&
    version >= 1 &&
    !SUPPORTED_SNAPSHOT_VERSIONS.includes(version)
  ) {
    // derived data of an older format: rebuilt from the log, never migrated field by field
    return {
      ok: false,
      reason: `outdated snapshot: version ${version}, this build writes ${CURRENT_SNAPSHOT_VERSION}; it is rebuilt from the log`,
      issues: [{ path: 'v', message: 'outdated version' }],
    };
  }
  const result = ConversationSnapshot.safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.flatMap((issue): SnapshotIssue[] => {
      const path = issue.path.map(String);
      if (issue.code === 'unrecognized_keys')
        return issue.keys.map((key) => ({ path: [...path, key].join('.'), message: 'unknown field' }));
      return [{ path: path.join('.') || '(root)', message: issue.message }];
    });
    return {
      ok: false,
      reason: `invalid snapshot: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`,
      issues,
    };
  }
  if (result.data.tenant !== ref.tenant || result.data.conversation !== ref.conversation) {
    return {
      ok: false,
      reason: `snapshot of ${result.data.tenant}/${result.data.conversation} stored under ${ref.tenant}/${ref.conversation}`,
      issues: [{ path: 'conversation', message: 'does not match the key' }],
    };
  }
  return { ok: true, snapshot: result.data };
}
