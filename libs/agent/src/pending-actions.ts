import type { ActionEvent, Event } from '@flotilla/events';

/** Executable actions without a result, split by whether a runner recorded their start. */
export type PendingActions = {
  readonly notStarted: readonly ActionEvent[];
  /** Started and unanswered: running now, or cut off by a crash. */
  readonly started: readonly ActionEvent[];
  /** Runner that recorded each started action. */
  readonly startedBy: ReadonlyMap<string, string>;
};

export function pendingActions(events: readonly Event[]): PendingActions {
  const answered = new Set<string>();
  const startedBy = new Map<string, string>();
  for (const event of events) {
    if (event.type === 'observation' || event.type === 'user_rejection') answered.add(event.tool_call_id);
    else if (event.type === 'agent_error' && event.tool_call_id !== undefined) answered.add(event.tool_call_id);
    else if (event.type === 'execution_started') for (const id of event.action_ids) startedBy.set(id, event.runner);
  }
  const notStarted: ActionEvent[] = [];
  const started: ActionEvent[] = [];
  for (const event of events) {
    if (event.type !== 'action' || event.input === null || answered.has(event.tool_call_id)) continue;
    (startedBy.has(event.id) ? started : notStarted).push(event);
  }
  return { notStarted, started, startedBy };
}
