import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';

export const FINISH_TOOL = 'finish';

/**
 * Whether the agent's last tool batch ended the run, after `event` (folded in log order from
 * `false`): a `finish` action that got a successful observation, with no user message (or a hook's
 * feedback: a Stop hook refusing the finish), action or new run after it (a message sent while the agent was finishing is answered, not dropped).
 */
export function finishCalledAfter(called: boolean, event: Event): boolean {
  switch (event.type) {
    case 'observation':
      return event.tool_name === FINISH_TOOL ? !event.is_error : called;
    case 'action':
      return false;
    case 'message':
      return event.source === 'user' || event.source === 'hook' ? false : called;
    case 'state_change':
      return event.status === 'running' ? false : called;
    default:
      return called;
  }
}

/** The commit that ends a run the agent finished (`nextWork` said `finish`). */
export function finishDrafts(conversation: Omit<DraftContext, 'source'>): EventDraft[] {
  return [
    draftEvent({ ...conversation, source: 'system' }, 'state_change', {
      status: 'finished',
      reason: 'the agent called finish',
    }),
  ];
}
