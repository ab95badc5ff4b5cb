import { isCommitKind, type CommitKind } from '@flotilla/bus';
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

/** The conversation a commit's subject names (either layout), or undefined for a subject outside the prefix. */
export function parseConversationSubject(prefix: string, subject: string): ConversationRef | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  if (tokens.length !== 2 && !(tokens.length === 3 && isCommitKind(tokens[2]!))) return undefined;
  const [tenant, conversation] = tokens as [string, string];
  return isSubjectToken(tenant) && isSubjectToken(conversation) ? { tenant, conversation } : undefined;
}

/** The kind a commit's subject carries; `undefined` for the legacy layout or a subject outside the prefix. */
export function subjectKind(prefix: string, subject: string): CommitKind | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  return tokens.length === 3 && isCommitKind(tokens[2]!) ? tokens[2] : undefined;
}
