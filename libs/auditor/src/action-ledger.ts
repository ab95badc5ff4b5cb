import type {
  ActionEvent,
  AgentErrorEvent,
  ExecutionStartedEvent,
  ObservationEvent,
  SubagentStartedEvent,
  UserRejectionEvent,
} from '@flotilla/events';
import { AuditRule } from './audit-rule.js';
import type { PendingAction, Violation } from './audit-report.js';

/** An event that answers a tool call. */
export type ResultEvent = ObservationEvent | UserRejectionEvent | (AgentErrorEvent & { tool_call_id: string });

type Located = { readonly commit: number; readonly streamSeq: number };

type ActionRecord = {
  readonly action: ActionEvent;
  readonly at: Located;
  results: { readonly type: ResultEvent['type']; readonly commit: number }[];
  observations: number;
  /** Index of the commit holding the first execution_started (for a `task` call: subagent_started) naming this action. */
  startedInCommit: number | undefined;
};

/** The tool whose calls are answered by sub-agents' conversations (libs/agent's TASK_TOOL), never run by a tool runner. */
const TASK_TOOL = 'task';

/**
 * Pairs actions with their results and execution records, in log order, and reports every
 * pairing rule it sees broken. Results pair by tool_call_id with the latest action holding it.
 */
export class ActionLedger {
  readonly #byCallId = new Map<string, ActionRecord>();
  readonly #byId = new Map<string, ActionRecord>();
  readonly #unanswered = new Set<ActionRecord>();
  readonly #orphans = new Map<string, { seq: number; streamSeq: number; type: string }[]>();
  /** Actions with input null in the commit being read. */
  #unparsedInCommit: ActionRecord[] = [];
  readonly #report: (violation: Violation) => void;

  constructor(report: (violation: Violation) => void) {
    this.#report = report;
  }

  /** Executable actions (input not null) without a result so far. */
  get unansweredCount(): number {
    return this.#unanswered.size;
  }

  action(action: ActionEvent, at: Located): void {
    const callId = action.tool_call_id;
    if (this.#byCallId.has(callId)) {
      this.#report({
        rule: AuditRule.DuplicateToolCallId,
        seq: action.seq,
        streamSeq: at.streamSeq,
        detail: `tool_call_id ${callId} was already used by seq ${this.#byCallId.get(callId)!.action.seq}`,
      });
    }
    const record: ActionRecord = { action, at, results: [], observations: 0, startedInCommit: undefined };
    this.#byCallId.set(callId, record);
    this.#byId.set(action.id, record);
    if (action.input !== null) this.#unanswered.add(record);
    else this.#unparsedInCommit.push(record);
    for (const orphan of this.#orphans.get(callId) ?? []) {
      this.#report({
        rule: AuditRule.ResultBeforeAction,
        seq: orphan.seq,
        streamSeq: orphan.streamSeq,
        detail: `${orphan.type} for ${callId} precedes its action (seq ${action.seq})`,
      });
    }
    this.#orphans.delete(callId);
  }

  result(result: ResultEvent, at: Located): void {
    const record = this.#byCallId.get(result.tool_call_id);
    if (!record) {
      const list = this.#orphans.get(result.tool_call_id) ?? [];
      list.push({ seq: result.seq, streamSeq: at.streamSeq, type: result.type });
      this.#orphans.set(result.tool_call_id, list);
      return;
    }
    const where = { seq: result.seq, streamSeq: at.streamSeq };
    const actionId = 'action_id' in result ? result.action_id : undefined;
    if (actionId !== undefined && actionId !== record.action.id) {
      this.#report({
        rule: AuditRule.ResultActionMismatch,
        ...where,
        detail: `${result.type} names action ${actionId} but tool_call_id ${result.tool_call_id} belongs to action ${record.action.id} (seq ${record.action.seq})`,
      });
    }
    record.results.push({ type: result.type, commit: at.commit });
    this.#unanswered.delete(record);
    const callName = `${record.action.tool_name} call ${result.tool_call_id} (action seq ${record.action.seq})`;
    if (result.type === 'observation') {
      record.observations += 1;
      if (record.startedInCommit === undefined || record.startedInCommit >= at.commit) {
        const start = record.action.tool_name === TASK_TOOL ? 'a subagent_started' : 'an execution_started';
        this.#report({
          rule: AuditRule.ObservationWithoutStart,
          ...where,
          detail: `observation for ${callName} without ${start} recorded in an earlier commit`,
        });
      }
    }
    if (result.type === 'observation' && record.observations > 1) {
      this.#report({
        rule: AuditRule.ActionExecutedTwice,
        ...where,
        detail: `observation #${record.observations} for ${callName}`,
      });
    } else if (record.results.length > 1) {
      const earlier = record.results
        .slice(0, -1)
        .map((entry) => entry.type)
        .join(', ');
      this.#report({
        rule: AuditRule.ActionAnsweredTwice,
        ...where,
        detail: `${result.type} for ${callName}, already answered by ${earlier}`,
      });
    }
  }

  executionStarted(event: ExecutionStartedEvent, at: Located): void {
    const named = new Set<string>();
    for (const id of event.action_ids) {
      const where = { seq: event.seq, streamSeq: at.streamSeq };
      const record = this.#byId.get(id);
      if (!record) {
        this.#report({
          rule: AuditRule.ExecutionOfUnknownAction,
          ...where,
          detail: `execution_started by ${event.runner} names ${id}, which is no earlier action`,
        });
        continue;
      }
      if (record.startedInCommit !== undefined || named.has(id)) {
        this.#report({
          rule: AuditRule.ExecutionStartedTwice,
          ...where,
          detail: `action seq ${record.action.seq} (${record.action.tool_name}) started again by ${event.runner}`,
        });
      }
      named.add(id);
      if (record.action.tool_name === TASK_TOOL) {
        this.#report({
          rule: AuditRule.DelegationExecuted,
          ...where,
          detail: `execution_started by ${event.runner} names task call ${record.action.tool_call_id} (seq ${record.action.seq}), which only a sub-agent answers`,
        });
      }
      if (record.results.length > 0) {
        this.#report({
          rule: AuditRule.ExecutionAfterResult,
          ...where,
          detail: `action seq ${record.action.seq} (${record.action.tool_name}) already has a ${record.results[0]!.type}`,
        });
      }
      record.startedInCommit ??= at.commit;
    }
  }

  /** A child conversation started for a `task` call: its start, as execution_started is a tool's. */
  subagentStarted(event: SubagentStartedEvent, at: Located): void {
    const where = { seq: event.seq, streamSeq: at.streamSeq };
    const record = this.#byId.get(event.action_id);
    if (!record || record.action.tool_name !== TASK_TOOL || record.action.tool_call_id !== event.tool_call_id) {
      const what = record
        ? `action seq ${record.action.seq} (${record.action.tool_name} call ${record.action.tool_call_id})`
        : `${event.action_id}, which is no earlier action`;
      this.#report({
        rule: AuditRule.SubagentOfUnknownCall,
        ...where,
        detail: `subagent_started (child ${event.child}, call ${event.tool_call_id}) names ${what}`,
      });
      return;
    }
    if (record.startedInCommit !== undefined)
      this.#report({
        rule: AuditRule.SubagentStartedTwice,
        ...where,
        detail: `task call ${event.tool_call_id} (seq ${record.action.seq}) got a second child, ${event.child}`,
      });
    if (record.results.length > 0)
      this.#report({
        rule: AuditRule.SubagentAfterResult,
        ...where,
        detail: `task call ${event.tool_call_id} (seq ${record.action.seq}) already has a ${record.results[0]!.type}`,
      });
    record.startedInCommit ??= at.commit;
  }

  /** Called after each commit: a call that could not be understood must be answered in its own commit. */
  endCommit(commit: number): void {
    for (const record of this.#unparsedInCommit) {
      if (!record.results.some((result) => result.type === 'agent_error' && result.commit === commit)) {
        this.#report({
          rule: AuditRule.UnparsedActionUnanswered,
          seq: record.action.seq,
          streamSeq: record.at.streamSeq,
          detail: `action ${record.action.tool_call_id} (${record.action.tool_name}) has input null and no agent_error in its commit`,
        });
      }
    }
    this.#unparsedInCommit = [];
  }

  /** Reports results whose call never appeared, and returns the actions still unanswered. */
  finish(): PendingAction[] {
    for (const [callId, orphans] of this.#orphans) {
      for (const orphan of orphans) {
        this.#report({
          rule: AuditRule.ResultForUnknownCall,
          seq: orphan.seq,
          streamSeq: orphan.streamSeq,
          detail: `${orphan.type} for tool_call_id ${callId}, which no action has`,
        });
      }
    }
    this.#orphans.clear();
    return [...this.#unanswered]
      .sort((a, b) => a.action.seq - b.action.seq)
      .map((record) => ({
        seq: record.action.seq,
        streamSeq: record.at.streamSeq,
        actionId: record.action.id,
        toolCallId: record.action.tool_call_id,
        toolName: record.action.tool_name,
        started: record.startedInCommit !== undefined,
      }));
  }
}
