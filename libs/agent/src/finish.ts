import type { Event } from '@flotilla/events';

export const FINISH_TOOL = 'finish';

/**
 * Did the agent's last tool batch end the run? True when a `finish` action got a successful
 * observation and no user message arrived after it (a message sent while the agent was
 * finishing is answered, not dropped).
 */
export function finishedByTool(events: readonly Event[]): boolean {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'message' && event.source === 'user') return false;
    if (event.type === 'action') return false;
    if (event.type === 'state_change' && event.status === 'running') return false;
    if (event.type === 'observation' && event.tool_name === FINISH_TOOL) return !event.is_error;
  }
  return false;
}
