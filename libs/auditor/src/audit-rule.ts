/**
 * Every rule the auditor checks, in one place. A violation names its rule; the comment on each
 * rule is the exact condition that breaks it. Positions: `seq` is an event seq, `streamSeq` the
 * JetStream sequence of the commit (or message) concerned.
 */
export const AuditRule = {
  // --- what the reader found on the subject -------------------------------------------------
  /** A message on the conversation subject that is not a valid commit (foreign, not JSON, schema violation, headers disagreeing with the body, another conversation's commit). */
  InvalidMessage: 'invalid-message',
  /** A commit written in a protocol version this auditor does not read: upgrade the auditor. */
  UnsupportedProtocolVersion: 'unsupported-protocol-version',

  // --- positions ----------------------------------------------------------------------------
  /** A commit whose tenant/conversation, or one of whose events' tenant/conversation, is not the audited conversation's. */
  WrongConversation: 'wrong-conversation',
  /** A commit with no events. */
  EmptyCommit: 'empty-commit',
  /** A commit whose `lastSeq` is not `firstSeq + events - 1`, or whose events' seqs are not `firstSeq, firstSeq+1, …`. */
  CommitRangeMismatch: 'commit-range-mismatch',
  /** A commit whose `firstSeq` is not the previous commit's `lastSeq + 1` (the first commit must start at 1): a gap or an overlap. */
  SeqNotContiguous: 'seq-not-contiguous',
  /** A commit whose stream sequence is not greater than the previous commit's. */
  StreamSeqNotIncreasing: 'stream-seq-not-increasing',
  /** Two commits with the same commit id. */
  DuplicateCommitId: 'duplicate-commit-id',
  /** Two events with the same event id. */
  DuplicateEventId: 'duplicate-event-id',

  // --- actions and their results -------------------------------------------------------------
  /** Two actions with the same tool_call_id: results could no longer be paired with their action. */
  DuplicateToolCallId: 'duplicate-tool-call-id',
  /** An action with input null (a call that could not be understood) without an agent_error for its tool_call_id in the same commit. */
  UnparsedActionUnanswered: 'unparsed-action-unanswered',
  /** A result (observation, user_rejection, agent_error with tool_call_id) whose tool_call_id no action in the log has. */
  ResultForUnknownCall: 'result-for-unknown-call',
  /** A result that precedes the action it answers (the action comes later in the log). */
  ResultBeforeAction: 'result-before-action',
  /** A result whose action_id is not the id of the action holding its tool_call_id. */
  ResultActionMismatch: 'result-action-mismatch',
  /** An action with a second result (of any kind) where at most one observation is involved. */
  ActionAnsweredTwice: 'action-answered-twice',
  /** An action with two or more observations: its tool ran twice. */
  ActionExecutedTwice: 'action-executed-twice',
  /** An observation for an action whose execution_started was not recorded in an EARLIER commit (at-most-once execution records the start before running). */
  ObservationWithoutStart: 'observation-without-start',
  /** execution_started naming an action more than once (in one event or across events). */
  ExecutionStartedTwice: 'execution-started-twice',
  /** execution_started naming an id that is no action event seen before it. */
  ExecutionOfUnknownAction: 'execution-of-unknown-action',
  /** execution_started for an action that already has a result. */
  ExecutionAfterResult: 'execution-after-result',
  /** execution_started while the status is not running (tool runners act only on running conversations). */
  ExecutionWhileNotRunning: 'execution-while-not-running',
  /** At the tail, an executable action (input not null) without a result while the final status is idle, finished, error or stuck: "running with nobody working", at rest. */
  PendingAtRest: 'pending-at-rest',

  // --- sub-agents -----------------------------------------------------------------------------
  /** subagent_started naming an id that is no earlier action, or an action of another tool than `task`. */
  SubagentOfUnknownCall: 'subagent-of-unknown-call',
  /** A second subagent_started for one action: one call, two children. */
  SubagentStartedTwice: 'subagent-started-twice',
  /** subagent_started for a call that already has a result. */
  SubagentAfterResult: 'subagent-after-result',
  /** subagent_started while the status is not running (children start only for a running parent). */
  SubagentWhileNotRunning: 'subagent-while-not-running',
  /** execution_started naming a `task` call: a tool runner ran what only sub-agents answer. */
  DelegationExecuted: 'delegation-executed',
  /** A subagent_task outside the conversation's first commit, or a second one. */
  SubagentTaskMisplaced: 'subagent-task-misplaced',
  /** (auditFamily) A child named by subagent_started whose log does not link back to that call (its subagent_task names another call, agent or depth), or that has no log while its call was not answered as deleted. */
  SubagentLinkMismatch: 'subagent-link-mismatch',

  // --- status and steps -----------------------------------------------------------------------
  /** A state_change whose status is not allowed from the current status by STATUS_TRANSITIONS. */
  IllegalTransition: 'illegal-transition',
  /** A user's message (source user, role user) while finished or stuck without a state_change to idle or running after it in the same commit. */
  UserMessageNotReopened: 'user-message-not-reopened',
  /** A step commit appended while the status (before the commit) is not running. */
  StepWhileNotRunning: 'step-while-not-running',
  /** A step commit appended while executable actions of earlier commits are unanswered: a step built on a tail it should not have decided on. */
  StepOnUnansweredActions: 'step-on-unanswered-actions',
  /** A step commit appended while the latest condensation_request has no condensation after it. */
  StepBeforeCondensation: 'step-before-condensation',
  /** A second system_prompt event (a step emits it only when the log has none). */
  SystemPromptRepeated: 'system-prompt-repeated',
} as const;
export type AuditRule = (typeof AuditRule)[keyof typeof AuditRule];
