import type { AuditReport, Violation } from './audit-report.js';
import type { StraySubject } from './list-conversations.js';

/** One line per conversation: OK with its figures, or FAIL followed by one indented line per violation. */
export function formatReport(report: AuditReport): string {
  const name = `${report.conversation.tenant}/${report.conversation.conversation}`;
  const { summary } = report;
  const figures =
    `${report.commits} commits, ${report.events} events, ${summary.steps} steps, ${summary.actions} actions, ` +
    `${summary.condensations} condensations, status ${report.finalStatus}` +
    (report.pending.length > 0 ? `, ${report.pending.length} action(s) pending` : '');
  if (report.violations.length === 0) return `OK    ${name}  (${figures})`;
  const lines = [`FAIL  ${name}  ${report.violations.length} violation(s)  (${figures})`];
  for (const violation of report.violations) lines.push(`      - ${formatViolation(violation)}`);
  return lines.join('\n');
}

export function formatViolation(violation: Violation): string {
  const where = [
    violation.seq === undefined ? undefined : `seq ${violation.seq}`,
    violation.streamSeq === undefined ? undefined : `stream #${violation.streamSeq}`,
  ]
    .filter((part) => part !== undefined)
    .join(', ');
  return `${violation.rule}${where === '' ? '' : ` (${where})`}: ${violation.detail}`;
}

export function formatStray(stray: StraySubject): string {
  return `STRAY ${stray.subject}  (${stray.messages} message(s) on a subject that names no conversation)`;
}
