import { ConversationId, EVENT_TYPES, EventSource, OnBusy, TenantId, Timestamp } from '@flotilla/events';
import { z } from 'zod';
import { ConversationStateFields } from './conversation-state.js';

/**
 * The snapshot format version this build writes. Version 2 added what commands decide from
 * (pending actions, early answers, the open condensation request), the final response's position
 * and the event counts by type and source. Version 3 added where the agent spec in force is;
 * version 4 the conversation's branches (what it was forked from, what rewinds abandoned);
 * version 5 where its latest run began.
 */
export const CURRENT_SNAPSHOT_VERSION = 5 as const;
/**
 * Snapshot versions this build can read; anything newer fails loudly. An older one is outdated:
 * it is rebuilt from the log (the snapshot is derived, so nothing is lost).
 */
export const SUPPORTED_SNAPSHOT_VERSIONS: readonly number[] = [5];

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

/** Events by type, then by source: only the pairs the conversation has (a filtered count adds these up). */
export const SnapshotEventCounts = z.partialRecord(z.enum(EVENT_TYPES), z.partialRecord(EventSource, Count));
export type SnapshotEventCounts = z.infer<typeof SnapshotEventCounts>;

/** Where the agent's answer to the latest user message is: its seq and its commit's stream sequence. */
export const SnapshotFinalResponse = z.strictObject({
  seq: z.number().int().positive(),
  stream_seq: z.number().int().positive(),
});
export type SnapshotFinalResponse = z.infer<typeof SnapshotFinalResponse>;

/** Where the agent spec in force is (its agent_spec event), and what a listing shows of it. */
export const SnapshotAgentSpec = z.strictObject({
  seq: z.number().int().positive(),
  stream_seq: z.number().int().positive(),
  /** The spec's model (`llm.model`), when it names one. */
  model: z.string().nullable(),
  /** The operator's template it was made from, when one was named. */
  template: z.string().nullable(),
  /** What a message sent while the conversation runs does when it does not say (the spec's `on_busy`; null: the spec has none, enqueue). */
  on_busy: OnBusy.nullable(),
  /** How long the conversation is kept after its last event, by its spec (`retention.idle_seconds`; null: the spec says nothing). */
  retention_seconds: z.number().int().positive().nullable(),
});
export type SnapshotAgentSpec = z.infer<typeof SnapshotAgentSpec>;

/** A point of a conversation's history: after its event `seq`. */
export const SnapshotBranchPoint = z.strictObject({ conversation: ConversationId, seq: z.number().int().positive() });
export type SnapshotBranchPoint = z.infer<typeof SnapshotBranchPoint>;

/** Seqs `first..last` of this conversation's log that a rewind left: still in the log, no longer in its view. */
export const SnapshotSeqRange = z.strictObject({
  first: z.number().int().positive(),
  last: z.number().int().positive(),
});
export type SnapshotSeqRange = z.infer<typeof SnapshotSeqRange>;

/**
 * Where the conversation's latest run began: the state_change that set it running from rest
 * (idle, paused, finished, stuck, error; an approval's resumes the same run), and when.
 */
export const SnapshotRunStart = z.strictObject({ seq: z.number().int().positive(), at: Timestamp });
export type SnapshotRunStart = z.infer<typeof SnapshotRunStart>;

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
 * never from the clock). It holds no event lists: what grows with the history is counted, and
 * the pending actions are one step's batch at most.
 */
export const ConversationSnapshot = z
  .strictObject({
    v: z.literal(CURRENT_SNAPSHOT_VERSION),
    tenant: TenantId,
    conversation: ConversationId,
    /** The last status set by a state_change event; idle before any. */
    status: ConversationStateFields.status,
    /** Actions without a result yet, in log order (ConversationState). */
    pending_actions: ConversationStateFields.pending_actions,
    /** Tool call ids answered before their action was logged (ConversationState). */
    early_answers: ConversationStateFields.early_answers,
    /** A condensation_request not yet answered by a condensation. */
    condensation_requested: ConversationStateFields.condensation_requested,
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
    event_counts: SnapshotEventCounts,
    usage: SnapshotUsage,
    last_error: SnapshotError.nullable(),
    /**
     * The agent's last message, or its finish action's message, since the last user message
     * (null when there is none): what GET …/final-response reads, with one direct get.
     */
    final_response: SnapshotFinalResponse.nullable(),
    /** The agent spec in force: the last agent_spec event (null in a conversation that has none). */
    agent_spec: SnapshotAgentSpec.nullable(),
    /** The conversation and point this one was forked from (its `branch` event of kind fork); null for one started afresh. */
    forked_from: SnapshotBranchPoint.nullable(),
    /**
     * The ranges of seqs rewinds abandoned, in order, disjoint and not adjacent: the current
     * branch is every other event. One range per rewind at most (a rewind past earlier ones merges them).
     */
    abandoned: z.array(SnapshotSeqRange),
    /** Where its latest run began (null before its first run); kept after the run ends. */
    run_started: SnapshotRunStart.nullable(),
  })
  .superRefine((snapshot, context) => {
    const empty = snapshot.last_seq === 0;
    if (snapshot.counters.events !== snapshot.last_seq) {
      context.addIssue({ code: 'custom', path: ['counters', 'events'], message: 'must equal last_seq' });
    }
    if (empty !== (snapshot.commits === 0) || empty !== (snapshot.last_stream_seq === 0)) {
      context.addIssue({
        code: 'custom',
        path: ['commits'],
        message: 'last_seq, last_stream_seq and commits are all 0 or all positive',
      });
    }
    if (empty !== (snapshot.created_at === null) || empty !== (snapshot.updated_at === null)) {
      context.addIssue({
        code: 'custom',
        path: ['created_at'],
        message: 'created_at and updated_at are null exactly when there are no events',
      });
    }
    let counted = 0;
    for (const bySource of Object.values(snapshot.event_counts))
      for (const count of Object.values(bySource ?? {})) counted += count ?? 0;
    if (counted !== snapshot.counters.events) {
      context.addIssue({ code: 'custom', path: ['event_counts'], message: 'must add up to counters.events' });
    }
    if (
      snapshot.final_response &&
      (snapshot.final_response.seq > snapshot.last_seq || snapshot.final_response.stream_seq > snapshot.last_stream_seq)
    ) {
      context.addIssue({ code: 'custom', path: ['final_response'], message: 'cannot be past the last event' });
    }
    if (
      snapshot.agent_spec &&
      (snapshot.agent_spec.seq > snapshot.last_seq || snapshot.agent_spec.stream_seq > snapshot.last_stream_seq)
    ) {
      context.addIssue({ code: 'custom', path: ['agent_spec'], message: 'cannot be past the last event' });
    }
    if (snapshot.run_started && snapshot.run_started.seq > snapshot.last_seq) {
      context.addIssue({ code: 'custom', path: ['run_started'], message: 'cannot be past the last event' });
    }
    if (snapshot.commits > snapshot.last_seq) {
      context.addIssue({
        code: 'custom',
        path: ['commits'],
        message: 'cannot exceed last_seq (every commit holds an event)',
      });
    }
  });
export type ConversationSnapshot = z.infer<typeof ConversationSnapshot>;
