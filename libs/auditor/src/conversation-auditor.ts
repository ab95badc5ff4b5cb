import type { ConversationStatus, Event } from '@flotilla/events';
import type { ConversationRef, StoredCommit } from '@flotilla/log';
import { ActionLedger } from './action-ledger.js';
import type { AuditReport, PendingAction, Violation } from './audit-report.js';
import { AuditRule } from './audit-rule.js';
import { PositionTracker } from './position-tracker.js';
import { HOLDING_STATUSES, INITIAL_STATUS, isAllowedTransition } from './status-transitions.js';

/** A message on the subject that was not a valid commit, as the reader saw it. */
export type InvalidMessage = {
  readonly streamSeq: number;
  readonly reason: string;
  /** Written in a protocol version this build does not read. */
  readonly unsupportedVersion?: boolean;
};

/**
 * A step commit is what one agent step appended: a commit holding an llm_usage event with
 * purpose 'step', an action, or a message from the agent (source 'agent'). Step commits that
 * only nudge, request a condensation or report an LLM failure hold none of these and are not
 * counted (they cannot build on a wrong tail without also breaking a status rule).
 */
export function isStepCommit(events: readonly Event[]): boolean {
  return events.some(
    (event) =>
      (event.type === 'llm_usage' && event.purpose === 'step') ||
      event.type === 'action' ||
      (event.type === 'message' && event.source === 'agent'),
  );
}

/** The commit's events but the copies that follow each `branch` event (its `copied` count). */
export function withoutBranchCopies(events: readonly Event[]): readonly Event[] {
  if (!events.some((event) => event.type === 'branch')) return events;
  const kept: Event[] = [];
  let skip = 0;
  for (const event of events) {
    if (skip > 0) {
      skip -= 1;
      continue;
    }
    kept.push(event);
    if (event.type === 'branch') skip = event.copied;
  }
  return kept;
}

/**
 * Audits one conversation commit by commit, in log order, keeping only what the rules need.
 * Feed it with `commit` and `invalidMessage`, then call `finish` once.
 */
export class ConversationAuditor {
  readonly #ref: ConversationRef;
  readonly #violations: Violation[] = [];
  readonly #positions: PositionTracker;
  readonly #ledger: ActionLedger;
  #status: ConversationStatus = INITIAL_STATUS;
  #commits = 0;
  #events = 0;
  #systemPromptSeq: number | undefined;
  #subagentTaskSeq: number | undefined;
  #condensationPending = false;
  /** Actions already reported as pending at rest (settle may run many times on a followed conversation). */
  readonly #reportedAtRest = new Set<string>();
  #counts = {
    actions: 0,
    observations: 0,
    errors: 0,
    conversationErrors: 0,
    rejections: 0,
    steps: 0,
    condensations: 0,
    invalidMessages: 0,
  };

  constructor(ref: ConversationRef) {
    this.#ref = ref;
    const report = (violation: Violation): void => void this.#violations.push(violation);
    this.#positions = new PositionTracker(ref, report);
    this.#ledger = new ActionLedger(report);
  }

  invalidMessage(message: InvalidMessage): void {
    this.#counts.invalidMessages += 1;
    this.#violations.push({
      rule: message.unsupportedVersion ? AuditRule.UnsupportedProtocolVersion : AuditRule.InvalidMessage,
      streamSeq: message.streamSeq,
      detail: message.reason,
    });
  }

  commit(commit: StoredCommit): void {
    const index = this.#commits;
    this.#commits += 1;
    this.#events += commit.events.length;
    this.#positions.check(commit);
    const at = { commit: index, streamSeq: commit.streamSeq };

    // a branch's copies of another point's view were audited where they first happened: they are
    // neither a step nor calls to answer here
    const events = withoutBranchCopies(commit.events);
    if (isStepCommit(events)) {
      this.#counts.steps += 1;
      this.#checkStep(commit);
    }
    let reopenNeededBy: Event | undefined;
    for (const event of events) {
      switch (event.type) {
        case 'action':
          this.#counts.actions += 1;
          this.#ledger.action(event, at);
          break;
        case 'observation':
          this.#counts.observations += 1;
          this.#ledger.result(event, at);
          break;
        case 'user_rejection':
          this.#counts.rejections += 1;
          this.#ledger.result(event, at);
          break;
        case 'agent_error':
          this.#counts.errors += 1;
          if (event.tool_call_id !== undefined) this.#ledger.result({ ...event, tool_call_id: event.tool_call_id }, at);
          break;
        case 'conversation_error':
          this.#counts.conversationErrors += 1;
          break;
        case 'execution_started':
          if (this.#status !== 'running') {
            this.#violations.push({
              rule: AuditRule.ExecutionWhileNotRunning,
              seq: event.seq,
              streamSeq: commit.streamSeq,
              detail: `execution_started by ${event.runner} while ${this.#status}`,
            });
          }
          this.#ledger.executionStarted(event, at);
          break;
        case 'condensation':
          this.#counts.condensations += 1;
          this.#condensationPending = false;
          break;
        case 'condensation_request':
          this.#condensationPending = true;
          break;
        case 'system_prompt':
          if (this.#systemPromptSeq !== undefined) {
            this.#violations.push({
              rule: AuditRule.SystemPromptRepeated,
              seq: event.seq,
              streamSeq: commit.streamSeq,
              detail: `system_prompt already at seq ${this.#systemPromptSeq}`,
            });
          } else {
            this.#systemPromptSeq = event.seq;
          }
          break;
        case 'message':
          if (
            event.source === 'user' &&
            event.role === 'user' &&
            (this.#status === 'finished' || this.#status === 'stuck')
          )
            reopenNeededBy ??= event;
          break;
        case 'state_change':
          if (event.status === undefined) break;
          if (!isAllowedTransition(this.#status, event.status)) {
            this.#violations.push({
              rule: AuditRule.IllegalTransition,
              seq: event.seq,
              streamSeq: commit.streamSeq,
              detail: `${this.#status} → ${event.status}`,
            });
          }
          if (reopenNeededBy && (event.status === 'idle' || event.status === 'running')) reopenNeededBy = undefined;
          this.#status = event.status;
          break;
        case 'secret_changed':
          // bookkeeping of the secrets bucket (names only): no invariant of the log constrains it, and it moves no status
          break;
        case 'subagent_started':
          if (this.#status !== 'running') {
            this.#violations.push({
              rule: AuditRule.SubagentWhileNotRunning,
              seq: event.seq,
              streamSeq: commit.streamSeq,
              detail: `subagent_started (child ${event.child}) while ${this.#status}`,
            });
          }
          this.#ledger.subagentStarted(event, at);
          break;
        case 'subagent_task':
          // a sub-agent's conversation says whose it is in its first commit, once
          if (index !== 0 || this.#subagentTaskSeq !== undefined) {
            this.#violations.push({
              rule: AuditRule.SubagentTaskMisplaced,
              seq: event.seq,
              streamSeq: commit.streamSeq,
              detail:
                this.#subagentTaskSeq !== undefined
                  ? `subagent_task already at seq ${this.#subagentTaskSeq}`
                  : `subagent_task in commit ${index + 1}, not the first`,
            });
          }
          this.#subagentTaskSeq ??= event.seq;
          break;
        default:
          break;
      }
    }
    if (reopenNeededBy) {
      this.#violations.push({
        rule: AuditRule.UserMessageNotReopened,
        seq: reopenNeededBy.seq,
        streamSeq: commit.streamSeq,
        detail: 'a user message to a finished or stuck conversation must move it to idle or running in the same commit',
      });
    }
    this.#ledger.endCommit(index);
  }

  #checkStep(commit: StoredCommit): void {
    const at = { seq: commit.firstSeq, streamSeq: commit.streamSeq };
    if (this.#status !== 'running') {
      this.#violations.push({
        rule: AuditRule.StepWhileNotRunning,
        ...at,
        detail: `step commit ${commit.id} while ${this.#status}`,
      });
    }
    const unanswered = this.#ledger.unansweredCount;
    if (unanswered > 0) {
      this.#violations.push({
        rule: AuditRule.StepOnUnansweredActions,
        ...at,
        detail: `step commit ${commit.id} while ${unanswered} earlier action(s) had no result`,
      });
    }
    if (this.#condensationPending) {
      this.#violations.push({
        rule: AuditRule.StepBeforeCondensation,
        ...at,
        detail: `step commit ${commit.id} while a condensation_request awaits its condensation`,
      });
    }
  }

  /** Violations found so far, in the order found (a follower reports `violationsSince(n)` after each commit). */
  get violationCount(): number {
    return this.#violations.length;
  }

  violationsSince(index: number): readonly Violation[] {
    return this.#violations.slice(index);
  }

  /**
   * The checks of a log's end, on a conversation followed live that has been quiet for a while:
   * results whose call never came, and actions nobody will answer because the conversation rests.
   * Each is reported once; the conversation can go on receiving commits.
   */
  settle(): readonly PendingAction[] {
    const pending = this.#ledger.finish();
    const status = this.#status;
    if (status !== 'running' && !HOLDING_STATUSES.includes(status)) {
      for (const action of pending) {
        if (this.#reportedAtRest.has(action.actionId)) continue;
        this.#reportedAtRest.add(action.actionId);
        this.#violations.push({
          rule: AuditRule.PendingAtRest,
          seq: action.seq,
          streamSeq: action.streamSeq,
          detail: `${action.toolName} call ${action.toolCallId} has no result${action.started ? ' (started)' : ''} but the conversation rests in ${status}: nobody will answer it`,
        });
      }
    }
    return pending;
  }

  finish(): AuditReport {
    const pending = this.settle();
    const status = this.#status;
    return {
      conversation: this.#ref,
      commits: this.#commits,
      events: this.#events,
      finalStatus: status,
      tail: this.#positions.tail,
      summary: { ...this.#counts },
      pending,
      violations: sortViolations(this.#violations),
    };
  }
}

function sortViolations(violations: readonly Violation[]): Violation[] {
  const key = (violation: Violation): number => violation.seq ?? Number.POSITIVE_INFINITY;
  const stream = (violation: Violation): number => violation.streamSeq ?? Number.POSITIVE_INFINITY;
  return [...violations].sort((a, b) => stream(a) - stream(b) || key(a) - key(b));
}
