import { auditConversation, formatReport } from '@flotilla/auditor';
import type { ConversationRef, EventLog } from '@flotilla/log';
import { expect } from 'vitest';

/** The conversation's log keeps every invariant the auditor checks (the report says which broke, where). */
export async function expectAudited(log: EventLog, ref: ConversationRef): Promise<void> {
  const report = await auditConversation(log, ref);
  expect(report.violations, formatReport(report)).toEqual([]);
}
