import { z } from 'zod';
import { ConversationId, EventId } from '../ids.js';
import { envelope, versionField } from './envelope.js';

/**
 * The conversation goes on from an earlier point: its view becomes the view that
 * `from.conversation` had after its event `from.seq`, and what follows builds on that.
 * - `fork`: the first commit of a new conversation, started from another's history (the parent
 *   is untouched);
 * - `rewind`: a point earlier in this same conversation; the events after it stay in the log,
 *   abandoned, and leave the view.
 *
 * Nothing is read from elsewhere to rebuild the view, so every reader folds forward as usual: the
 * view items after the longest prefix the current view shares with the view at `from.seq` are
 * forgotten (`forgotten_event_ids`, as a condensation forgets), and the `copied` events right
 * after this one in its commit are copies of the rest of that view (messages, actions with their
 * results, a summary as a condensation). A copy is never executed again. Written by the gateway
 * (`source: user`). Introduced in protocol version 4.
 */
export const BranchEvent = z.strictObject({
  ...envelope,
  v: versionField('branch', 4),
  type: z.literal('branch'),
  kind: z.enum(['fork', 'rewind']),
  /** Whose history and up to which of its events: the parent's for a fork, this conversation's own for a rewind. */
  from: z.strictObject({ conversation: ConversationId, seq: z.number().int().positive() }),
  forgotten_event_ids: z.array(EventId),
  copied: z.number().int().nonnegative(),
  reason: z.string().max(2_000).optional(),
});
export type BranchEvent = z.infer<typeof BranchEvent>;
