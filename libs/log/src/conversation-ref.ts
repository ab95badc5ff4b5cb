import { isCommitKind, PARTITIONS, type CommitKind } from '@flotilla/bus';
import { isSubjectToken } from '@flotilla/events';
import { LogError, LogErrorCode } from './errors.js';

/** Names one conversation: its tenant and its id. */
export type ConversationRef = { readonly tenant: string; readonly conversation: string };

export { DEFAULT_SUBJECT_PREFIX } from '@flotilla/bus';

export function assertConversationRef(ref: ConversationRef): void {
  for (const [field, value] of [
    ['tenant', ref.tenant],
    ['conversation', ref.conversation],
  ] as const) {
    if (!isSubjectToken(value)) {
      throw new LogError(LogErrorCode.InvalidEvent, `${field} "${value}" must be 1-64 characters of A-Z a-z 0-9 _ -`, {
        issues: [{ path: field, message: 'not a valid id' }],
      });
    }
  }
}

/** `<prefix>.<tenant>.<conversation>.<kind>`: the subject of a conversation's commits of one kind. */
export function conversationSubject(prefix: string, ref: ConversationRef, kind: CommitKind): string {
  assertConversationRef(ref);
  return `${prefix}.${ref.tenant}.${ref.conversation}.${kind}`;
}

/**
 * `<prefix>.<tenant>.<conversation>.>`: every commit of a conversation (its log, and what an
 * append's expected sequence is checked against), whatever follows the conversation's token:
 * tokens added after the kind later (a partition, say) leave every reader and writer as it is.
 */
export function conversationFilter(prefix: string, ref: ConversationRef): string {
  assertConversationRef(ref);
  return `${prefix}.${ref.tenant}.${ref.conversation}.>`;
}

/** `<prefix>.<tenant>.<conversation>`: where a conversation's commits were before they carried their kind (read, never written). */
export function legacyConversationSubject(prefix: string, ref: ConversationRef): string {
  assertConversationRef(ref);
  return `${prefix}.${ref.tenant}.${ref.conversation}`;
}

/**
 * The tokens after the prefix of a commit's subject, when it has one of the three layouts:
 * `<tenant>.<conversation>` (legacy), `….<kind>` (as published, and as stored before the stream
 * partitioned commits) and `….<kind>.<partition>` (as stored: libs/bus commitSubjectTransform).
 */
function commitTokens(
  prefix: string,
  subject: string,
): { tenant: string; conversation: string; kind: CommitKind | undefined; partition: number | undefined } | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  const [tenant, conversation, kind, partition] = tokens as [string, string, string | undefined, string | undefined];
  if (tokens.length > 4 || tokens.length < 2 || !isSubjectToken(tenant) || !isSubjectToken(conversation))
    return undefined;
  if (kind === undefined) return { tenant, conversation, kind: undefined, partition: undefined };
  if (!isCommitKind(kind)) return undefined;
  if (partition !== undefined && !isPartition(partition)) return undefined;
  return { tenant, conversation, kind, partition: partition === undefined ? undefined : Number(partition) };
}

function isPartition(token: string): boolean {
  return /^(0|[1-9][0-9]?)$/.test(token) && Number(token) < PARTITIONS;
}

/** The conversation a commit's subject names (any layout), or undefined for a subject outside them. */
export function parseConversationSubject(prefix: string, subject: string): ConversationRef | undefined {
  const tokens = commitTokens(prefix, subject);
  return tokens ? { tenant: tokens.tenant, conversation: tokens.conversation } : undefined;
}

/** The kind a commit's subject carries; `undefined` for the legacy layout or a subject outside the layouts. */
export function subjectKind(prefix: string, subject: string): CommitKind | undefined {
  return commitTokens(prefix, subject)?.kind;
}

/** The partition a stored commit's subject carries; `undefined` for the layouts without one or a subject outside them. */
export function subjectPartition(prefix: string, subject: string): number | undefined {
  return commitTokens(prefix, subject)?.partition;
}
