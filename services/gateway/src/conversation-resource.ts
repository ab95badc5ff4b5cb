import type { Conversation, QueuedRun } from '@flotilla/api';
import type { ConversationSnapshot } from '@flotilla/state';

/** A conversation as the API shows it: its snapshot's fields, and its run waiting in the queue, if any. */
export function toResource(snapshot: ConversationSnapshot, queue: QueuedRun | null = null): Conversation {
  return {
    id: snapshot.conversation,
    status: snapshot.status,
    title: snapshot.title,
    tags: snapshot.tags,
    created_at: snapshot.created_at,
    updated_at: snapshot.updated_at,
    last_seq: snapshot.last_seq,
    counters: snapshot.counters,
    usage: snapshot.usage,
    last_error: snapshot.last_error,
    agent: snapshot.agent_spec && {
      model: snapshot.agent_spec.model,
      template: snapshot.agent_spec.template,
      spec_seq: snapshot.agent_spec.seq,
    },
    branch: { forked_from: snapshot.forked_from, abandoned: snapshot.abandoned },
    run_started: snapshot.run_started,
    queue,
  };
}
