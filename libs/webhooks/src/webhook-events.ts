import { createHash } from 'node:crypto';
import type { WebhookEvent, WebhookEventType } from '@flotilla/api';
import type { StoredCommit } from '@flotilla/log';
import { copyState, foldState, notStartedActions, type ConversationState } from '@flotilla/state';

/**
 * The id of the webhook event of `kind` that the log event `eventId` of a conversation caused:
 * the same whenever it is derived (a commit handled again, another instance), so receivers can
 * de-duplicate on it.
 */
export function webhookEventId(tenant: string, conversation: string, eventId: string, kind: WebhookEventType): string {
  const digest = createHash('sha256')
    .update(`${tenant}\u0000${conversation}\u0000${eventId}\u0000${kind}`)
    .digest('base64url');
  return `evt_${digest.slice(0, 32)}`;
}

/**
 * The webhook events of one commit, given the conversation's state before it (libs/state's fold):
 * for each `state_change` that changes the status, `conversation.status_changed`, and with it
 * `conversation.confirmation_pending` (to waiting_for_confirmation, with the actions that wait for
 * approval as they stand at the commit's end) or `conversation.finished` (to finished). Setting the
 * status a conversation already has is no change. Returns the state after the commit too.
 */
export function webhookEventsOf(
  commit: StoredCommit,
  before: ConversationState,
): { events: WebhookEvent[]; after: ConversationState } {
  const state = copyState(before);
  const changes: {
    readonly id: string;
    readonly seq: number;
    readonly timestamp: string;
    readonly previous: ConversationState['status'];
    readonly status: ConversationState['status'];
    readonly reason: string | undefined;
  }[] = [];
  for (const event of commit.events) {
    const previous = state.status;
    foldState(state, event);
    if (event.type === 'state_change' && event.status !== undefined && event.status !== previous) {
      changes.push({
        id: event.id,
        seq: event.seq,
        timestamp: event.timestamp,
        previous,
        status: event.status,
        reason: event.reason,
      });
    }
  }
  const events: WebhookEvent[] = [];
  for (const change of changes) {
    const envelope = (kind: WebhookEventType) => ({
      v: 1 as const,
      id: webhookEventId(commit.tenant, commit.conversation, change.id, kind),
      created_at: change.timestamp,
      tenant: commit.tenant,
    });
    const data = {
      conversation: commit.conversation,
      seq: change.seq,
      status: change.status,
      previous_status: change.previous,
      ...(change.reason === undefined ? {} : { reason: change.reason }),
    };
    events.push({ ...envelope('conversation.status_changed'), type: 'conversation.status_changed', data });
    if (change.status === 'waiting_for_confirmation') {
      const actions = notStartedActions(state).map((action) => ({
        id: action.id,
        tool_call_id: action.tool_call_id,
        tool_name: action.tool_name,
      }));
      events.push({
        ...envelope('conversation.confirmation_pending'),
        type: 'conversation.confirmation_pending',
        data: { ...data, actions },
      });
    }
    if (change.status === 'finished')
      events.push({ ...envelope('conversation.finished'), type: 'conversation.finished', data });
  }
  return { events, after: state };
}
