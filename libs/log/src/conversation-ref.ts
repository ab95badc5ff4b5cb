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

/** `<prefix>.<tenant>.<conversation>`: one subject per conversation. */
export function conversationSubject(prefix: string, ref: ConversationRef): string {
  assertConversationRef(ref);
  return `${prefix}.${ref.tenant}.${ref.conversation}`;
}

/** The inverse of conversationSubject, or undefined for a subject outside the prefix. */
export function parseConversationSubject(prefix: string, subject: string): ConversationRef | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const tokens = subject.slice(prefix.length + 1).split('.');
  if (tokens.length !== 2) return undefined;
  const [tenant, conversation] = tokens as [string, string];
  return isSubjectToken(tenant) && isSubjectToken(conversation) ? { tenant, conversation } : undefined;
}
