import { decodeCommit } from '@flotilla/log';
import type { CommitHandler, HandleOutcome } from '@flotilla/runtime';
import { webhookEventsOf, type DeliveryJob, type WebhookDirectory } from '@flotilla/webhooks';
import type { ConversationStates } from './conversation-states.js';

export type CommitHandlerParts = {
  readonly directory: WebhookDirectory;
  readonly states: ConversationStates;
  /** Resolves once JetStream stored the delivery. */
  readonly enqueue: (job: DeliveryJob) => Promise<void>;
  readonly now?: () => Date;
};

/**
 * What the webhooks service does with a commit of the conversations' log: the webhook events it
 * causes (its status changes, libs/webhooks webhookEventsOf), one delivery per event for each
 * webhook of the commit's tenant that chose its kind and was registered before the commit, each
 * stored in the delivery queue before the commit is acknowledged (a failure leaves the commit to
 * be redelivered; a delivery queued twice is stored once). Only the commit's own tenant's
 * webhooks are looked at: a tenant never gets another's events.
 */
export function createCommitHandler(parts: CommitHandlerParts): CommitHandler {
  const now = parts.now ?? (() => new Date());
  return async (delivery): Promise<HandleOutcome> => {
    const ref = delivery.ref;
    if (!ref) return { ack: true, outcome: 'foreign' };
    const changesStatus = delivery.eventTypes().includes('state_change');
    // a webhook registered before this commit was appended is in the directory once it caught up
    if (changesStatus) await parts.directory.caughtUp();
    const webhooks = parts.directory
      .forTenant(ref.tenant)
      .filter((webhook) => webhook.starts_after_stream_seq < delivery.streamSeq);
    if (webhooks.length === 0) {
      parts.states.forget(ref);
      return { ack: true, outcome: 'no_webhooks' };
    }
    const decoded = decodeCommit(delivery.message, ref);
    if (!decoded.ok) {
      delivery.logger.warn(
        { streamSeq: delivery.streamSeq, reason: decoded.reason },
        'an invalid message in the log: no webhook event derived from it',
      );
      parts.states.forget(ref);
      return { ack: true, outcome: 'invalid' };
    }
    const commit = decoded.commit;
    if (!changesStatus) {
      parts.states.advance(ref, commit);
      return { ack: true, outcome: 'no_status_change' };
    }
    const { events, after } = webhookEventsOf(commit, await parts.states.before(ref, commit));
    let queued = 0;
    for (const event of events) {
      for (const webhook of webhooks) {
        if (!webhook.events.includes(event.type)) continue;
        await parts.enqueue({ v: 1, tenant: ref.tenant, webhook: webhook.id, enqueued_at: now().toISOString(), event });
        queued += 1;
      }
    }
    parts.states.remember(ref, commit, after);
    return { ack: true, outcome: queued > 0 ? 'enqueued' : 'no_events' };
  };
}
