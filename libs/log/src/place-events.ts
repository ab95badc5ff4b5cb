import { Event, describeIssues, isValidEvent, type EventDraft, type ProtocolIssue } from '@flotilla/events';
import type { ConversationRef } from './conversation-ref.js';
import { LogError, LogErrorCode } from './errors.js';

/** Assigns seqs after `lastSeq` and validates every event, naming each bad field. */
export function placeEvents(ref: ConversationRef, drafts: readonly EventDraft[], lastSeq: number): Event[] {
  if (drafts.length === 0)
    throw new LogError(LogErrorCode.InvalidEvent, 'a commit needs at least one event', {
      issues: [{ path: 'events', message: 'empty' }],
    });
  const issues: ProtocolIssue[] = [];
  const events: Event[] = [];
  drafts.forEach((draft, index) => {
    const candidate = { ...draft, seq: lastSeq + 1 + index };
    // the compiled JSON Schema vouches for valid events quickly; zod names what is wrong
    if (isValidEvent(candidate)) {
      if (candidate.tenant !== ref.tenant)
        issues.push({ path: `events.${index}.tenant`, message: `must be "${ref.tenant}"` });
      if (candidate.conversation !== ref.conversation)
        issues.push({ path: `events.${index}.conversation`, message: `must be "${ref.conversation}"` });
      events.push(candidate);
      return;
    }
    const result = Event.safeParse(candidate);
    if (!result.success) {
      for (const issue of result.error.issues) {
        issues.push({
          path: `events.${index}.${issue.path.map(String).join('.') || '(root)'}`,
          message: issue.message,
        });
      }
      return;
    }
    if (result.data.tenant !== ref.tenant)
      issues.push({ path: `events.${index}.tenant`, message: `must be "${ref.tenant}"` });
    if (result.data.conversation !== ref.conversation) {
      issues.push({ path: `events.${index}.conversation`, message: `must be "${ref.conversation}"` });
    }
    events.push(result.data);
  });
  if (issues.length > 0) {
    throw new LogError(LogErrorCode.InvalidEvent, `refused to append invalid events: ${describeIssues(issues)}`, {
      issues,
    });
  }
  return events;
}
