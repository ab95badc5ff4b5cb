import { ConversationId, ConversationStatus, TenantId, Timestamp } from '@flotilla/events';
import { z } from 'zod';

/** The snapshot format version this build writes. */
export const CURRENT_SNAPSHOT_VERSION = 1 as const;
/** Snapshot versions this build can read; anything newer fails loudly. */
export const SUPPORTED_SNAPSHOT_VERSIONS: readonly number[] = [1];

const Count = z.number().int().nonnegative();

/** How many events of each kind the conversation holds. */
export const SnapshotCounters = z.strictObject({
  /** Every event (equals last_seq: seqs are contiguous from 1). */
  events: Count,
  /** Messages a person wrote (role user, source user); environment nudges are not counted. */
  user_messages: Count,
  /** Messages of the model (role assistant). */
  agent_messages: Count,
  actions: Count,
  observations: Count,
  agent_errors: Count,
  /** user_rejection events. */
  rejections: Count,
  /** condensation events (not requests). */
  condensations: Count,
  /** llm_usage events. */
  llm_calls: Count,
});
export type SnapshotCounters = z.infer<typeof SnapshotCounters>;

/** Sums over the conversation's llm_usage events. */
export const SnapshotUsage = z.strictObject({
  prompt_tokens: Count,
  completion_tokens: Count,
  cache_read_tokens: Count,
  cache_write_tokens: Count,
  reasoning_tokens: Count,
  cost_usd: z.number().nonnegative(),
});
export type SnapshotUsage = z.infer<typeof SnapshotUsage>;

/** The last conversation_error, until a state change sets the status to running again. */
export const SnapshotError = z.strictObject({
  code: z.string().min(1),
  detail: z.string(),
  /** seq of the conversation_error event. */
  seq: z.number().int().positive(),
});
export type SnapshotError = z.infer<typeof SnapshotError>;

/**
 * A conversation's small, mutable read model, kept in KV and derived only from its log:
 * folding the same commits always yields the same snapshot (timestamps come from events,
 * never from the clock). It holds no event lists.
 */
export const ConversationSnapshot = z
  .strictObject({
    v: z.literal(CURRENT_SNAPSHOT_VERSION),
    tenant: TenantId,
    conversation: ConversationId,
    /** The last status set by a state_change event; idle before any. */
    status: ConversationStatus,
    /** seq of the last event folded in (0 before any). */
    last_seq: Count,
    /** Stream sequence of the last commit folded in (0 before any). */
    last_stream_seq: Count,
    /** Number of commits folded in. */
    commits: Count,
    /** Timestamp of the first event; null before any. */
    created_at: Timestamp.nullable(),
    /** Timestamp of the last event; null before any. */
    updated_at: Timestamp.nullable(),
    title: z.string().nullable(),
    tags: z.array(z.string()),
    /** Reference to the agent settings in force. */
    settings_ref: z.string().nullable(),
    counters: SnapshotCounters,
    usage: SnapshotUsage,
    last_error: SnapshotError.nullable(),
  })
  .superRefine((snapshot, context) => {
    const empty = snapshot.last_seq === 0;
    if (snapshot.counters.events !== snapshot.last_seq) {
      context.addIssue({ code: 'custom', path: ['counters', 'events'], message: 'must equal last_seq' });
    }
    if (empty !== (snapshot.commits === 0) || empty !== (snapshot.last_stream_seq === 0)) {
      context.addIssue({ code: 'custom', path: ['commits'], message: 'last_seq, last_stream_seq and commits are all 0 or all positive' });
    }
    if (empty !== (snapshot.created_at === null) || empty !== (snapshot.updated_at === null)) {
      context.addIssue({ code: 'custom', path: ['created_at'], message: 'created_at and updated_at are null exactly when there are no events' });
    }
    if (snapshot.commits > snapshot.last_seq) {
      context.addIssue({ code: 'custom', path: ['commits'], message: 'cannot exceed last_seq (every commit holds an event)' });
    }
  });
export type ConversationSnapshot = z.infer<typeof ConversationSnapshot>;
