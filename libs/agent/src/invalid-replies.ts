import type { Event } from '@flotilla/events';

/**
 * How many of the model's replies in a row, at the end of the log and within the current run,
 * the step answered with a correction instead of acting on, counting at most `atMost`:
 * - a reply whose every tool call was invalid (its actions have input null, each answered by an
 *   agent_error): one per reply, however many calls it made;
 * - a reply that wrote a tool call as text (answered by a free-standing agent_error);
 * - an empty reply or one the provider's content filter blocked (answered by an environment message).
 *
 * A usable tool call (an action with input) ends the row, as does a user's message or the start
 * of the run (`from`, an index of `events`). Walks back from the end, so the cost is the row, not
 * the history; every reply it counts but an empty or filtered one is a step `detectStuck` counts
 * too, so a reader of a view checkpoint (which keeps `CHECKPOINT_STUCK_STEPS` steps before it)
 * counts the same up to that many.
 */
export function invalidRepliesInRow(events: readonly Event[], from: number, atMost: number): number {
  let count = 0;
  // a reply's actions and their answers lie together, after its llm_usage: one count per such run
  // of events (not per response id, which a provider may repeat)
  let inReply = false;
  for (let index = events.length - 1; index >= from && count < atMost; index -= 1) {
    const event = events[index]!;
    if (event.type === 'message' && event.source === 'user') break;
    if (event.type === 'action') {
      if (event.input !== null) break;
      if (!inReply) count += 1;
      inReply = true;
      continue;
    }
    if (event.type === 'agent_error' && event.tool_call_id !== undefined) continue;
    inReply = false;
    if (event.type === 'agent_error' && event.source === 'environment') count += 1;
    else if (event.type === 'message' && event.source === 'environment') count += 1;
  }
  return count;
}
