import { parseEvent, type CondensationEvent } from '@flotilla/events';
import { buildView, toChatMessages, type View } from '@flotilla/view';
import type { CondenseResult } from '../condense.js';
import { chatProblems } from './chat-problems.js';
import type { TestLog } from './test-log.js';

export type Applied = { readonly before: View; readonly after: View; readonly condensation: CondensationEvent };

/** Appends a condensation's drafts to the log (validating them) and returns the views around it. */
export function applyCondensation(log: TestLog, result: CondenseResult): Applied {
  const before = buildView(log.events);
  const placed = log.append(result.drafts).map((event) => parseEvent(event));
  const condensation = placed.find((event): event is CondensationEvent => event.type === 'condensation');
  if (condensation === undefined) throw new Error('no condensation among the drafts');
  const after = buildView(log.events);
  const problems = chatProblems(toChatMessages(after));
  if (problems.length > 0) throw new Error(`the condensed view is invalid: ${problems.join('; ')}`);
  return { before, after, condensation };
}

export function ids(items: View['items']): string[] {
  return items.map((item) => item.id);
}
