import type { ConversationRef } from '@flotilla/log';
import type { Delivery } from '@flotilla/runtime';
import type { Attributes, SpanOptions } from '@flotilla/tracing';

/**
 * A span reacting to a delivered commit: the child of the trace context the commit carries (the
 * span that appended it, in whichever process), so one trace follows a user message from the
 * gateway through every service. A commit without one starts a trace.
 */
export function commitSpan(delivery: Delivery, ref: ConversationRef, attributes: Attributes = {}): SpanOptions {
  return {
    parent: { get: (name) => delivery.header(name) },
    attributes: {
      'flotilla.tenant': ref.tenant,
      'flotilla.conversation': ref.conversation,
      'flotilla.stream_seq': delivery.streamSeq,
      ...attributes,
    },
  };
}
