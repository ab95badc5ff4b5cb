import type { FinalResponse } from '@flotilla/api';
import type { Event } from '@flotilla/events';
import type { ConversationRef, EventLog } from '@flotilla/log';
import type { ConversationSnapshot } from '@flotilla/state';

/**
 * The agent's last message (or finish message) since the last user message: the snapshot says
 * where it is, and one direct get reads its commit.
 */
export async function readFinalResponse(
  log: EventLog,
  ref: ConversationRef,
  snapshot: ConversationSnapshot,
): Promise<FinalResponse> {
  const position = snapshot.final_response;
  if (!position) return { text: null, seq: null, status: snapshot.status };
  const from = {
    afterSeq: position.seq - 1,
    afterStreamSeq: position.stream_seq - 1,
    untilStreamSeq: position.stream_seq,
  };
  let event: Event | undefined;
  for await (const commit of log.read(ref, from))
    event ??= commit.events.find((candidate) => candidate.seq === position.seq);
  return { text: event ? responseText(event) : null, seq: event ? event.seq : null, status: snapshot.status };
}

/** The text of a final response: a message's text parts, or a finish action's message. */
function responseText(event: Event): string | null {
  if (event.type === 'message')
    return event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  if (event.type === 'action' && typeof event.input?.['message'] === 'string') return event.input['message'];
  return null;
}
