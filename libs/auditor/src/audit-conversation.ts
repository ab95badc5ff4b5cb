import type { ConversationRef } from '@flotilla/log';
import type { AuditReport } from './audit-report.js';
import { ConversationAuditor } from './conversation-auditor.js';
import { listConversations, type StraySubject } from './list-conversations.js';
import type { LogLocation } from './log-location.js';
import { readSubject } from './read-subject.js';

export type AuditConversationOptions = { readonly signal?: AbortSignal };

/**
 * Reads everything stored on the conversation's subject (see readSubject: raw, not repaired by
 * the log reader) and audits it. Messages that are not valid commits become `invalid-message`
 * (or `unsupported-protocol-version`) violations. Streams: memory grows with ids, not events.
 */
export async function auditConversation(
  location: LogLocation,
  ref: ConversationRef,
  options: AuditConversationOptions = {},
): Promise<AuditReport> {
  const auditor = new ConversationAuditor({ tenant: ref.tenant, conversation: ref.conversation });
  for await (const entry of readSubject(location, ref, options.signal)) {
    if (entry.kind === 'commit') auditor.commit(entry.commit);
    else auditor.invalidMessage(entry.message);
  }
  return auditor.finish();
}

export type AuditAllOptions = AuditConversationOptions & {
  readonly tenant?: string;
  /** Called with each report as soon as it is ready (e.g. to print progressively). */
  readonly onReport?: (report: AuditReport) => void;
};

export type AuditAllResult = {
  readonly reports: readonly AuditReport[];
  /** Subjects in the stream's range that name no conversation: foreign traffic. */
  readonly strays: readonly StraySubject[];
};

/** Audits every conversation on the stream (or one tenant's), one after another. */
export async function auditAll(location: LogLocation, options: AuditAllOptions = {}): Promise<AuditAllResult> {
  const listing = await listConversations(location, options.tenant === undefined ? {} : { tenant: options.tenant });
  const reports: AuditReport[] = [];
  for (const { tenant, conversation } of listing.conversations) {
    options.signal?.throwIfAborted();
    const report = await auditConversation(location, { tenant, conversation }, options);
    options.onReport?.(report);
    reports.push(report);
  }
  return { reports, strays: listing.strays };
}
