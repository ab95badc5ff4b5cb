import type { Event } from '@flotilla/events';

export const FINISH_TOOL = 'finish';

/**
 * Did the agent's last tool batch end the run? True when a `finish` action got a successful
 * observation and no user message arrived after it (a message sent while the agent was
 * finishing is answered, not dropped).
 */
export function finishedByTool(events: readonly Event[]): boolean {
  const index = finishLookback(events);
  const event = events[index];
  return event?.type === 'observation' && event.tool_name === FINISH_TOOL && !event.is_error;
}

/**
 * The index of the event `finishedByTool` decides on (0 when none does): from any later end of
 * the log it reads no further back.
 */
export function finishLookback(events: readonly Event[]): number {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'message' && event.source === 'user') return index;
    if (event.type === 'action') return index;
    if (event.type === 'state_change' && event.status === 'running') return index;
    if (event.type === 'observation' && event.tool_name === FINISH_TOOL) return index;
  }
  return 0;
}
