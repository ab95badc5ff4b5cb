import type { ConversationRef, StoredCommit } from '@flotilla/log';
import type { AuditReport } from './audit-report.js';
import { ConversationAuditor, type InvalidMessage } from './conversation-auditor.js';
import { AuditorError, AuditorErrorCode } from './errors.js';

export type AuditOptions = {
  /** The conversation audited; default: the first commit's. Required for an empty list. */
  readonly conversation?: ConversationRef;
  /** Messages the reader could not decode, reported as violations. */
  readonly invalidMessages?: readonly InvalidMessage[];
};

/** Audits one conversation's commits, in log order. Pure: no I/O, never throws for a bad log. */
export function auditCommits(commits: readonly StoredCommit[], options: AuditOptions = {}): AuditReport {
  const first = commits[0];
  const ref = options.conversation ?? (first && { tenant: first.tenant, conversation: first.conversation });
  if (!ref)
    throw new AuditorError(
      AuditorErrorCode.MissingConversation,
      'auditCommits needs options.conversation when there are no commits',
    );
  const auditor = new ConversationAuditor(ref);
  for (const message of options.invalidMessages ?? []) auditor.invalidMessage(message);
  for (const commit of commits) auditor.commit(commit);
  return auditor.finish();
}
