import type { SubagentStartedEvent, SubagentTaskEvent } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { AuditReport, Violation } from './audit-report.js';
import { AuditRule } from './audit-rule.js';
import { ConversationAuditor } from './conversation-auditor.js';
import type { LogLocation } from './log-location.js';
import { readSubject } from './read-subject.js';

/** A conversation and the sub-agents' conversations it started, audited, with what ties them together. */
export type FamilyReport = {
  /** Each conversation's own audit: the root's first, then its children's, depth first. */
  readonly reports: readonly AuditReport[];
  /** Links between a parent and its children that do not hold (SubagentLinkMismatch), each with the parent it concerns. */
  readonly links: readonly (Violation & { readonly conversation: ConversationRef })[];
};

type Read = {
  readonly report: AuditReport;
  readonly task: SubagentTaskEvent | undefined;
  readonly started: readonly SubagentStartedEvent[];
  readonly deletedAnswers: ReadonlySet<string>;
};

/**
 * Audits a conversation and, through its `subagent_started` events, every child it started (and
 * theirs): each log by the rules of one conversation, and each link both ways: the child a call
 * started has a log whose `subagent_task` names that very call, sub-agent and the next depth
 * (unless the call was answered saying the child was deleted).
 */
export async function auditFamily(
  location: LogLocation,
  root: ConversationRef,
  options: { readonly signal?: AbortSignal } = {},
): Promise<FamilyReport> {
  const reports: AuditReport[] = [];
  const links: (Violation & { conversation: ConversationRef })[] = [];
  const seen = new Set<string>();
  const visit = async (
    ref: ConversationRef,
    expected?: {
      readonly parent: ConversationRef;
      readonly started: SubagentStartedEvent;
      readonly depth: number;
      readonly deleted: boolean;
    },
  ): Promise<void> => {
    const key = `${ref.tenant}.${ref.conversation}`;
    if (seen.has(key)) return;
    seen.add(key);
    const read = await readConversation(location, ref, options.signal);
    if (expected) {
      const mismatch = linkMismatch(read, expected);
      if (mismatch)
        links.push({
          rule: AuditRule.SubagentLinkMismatch,
          seq: expected.started.seq,
          detail: mismatch,
          conversation: expected.parent,
        });
      if (read.report.commits === 0) return;
    }
    reports.push(read.report);
    const depth = read.task?.depth ?? 0;
    for (const started of read.started) {
      await visit(
        { tenant: ref.tenant, conversation: started.child },
        { parent: ref, started, depth: depth + 1, deleted: read.deletedAnswers.has(started.tool_call_id) },
      );
    }
  };
  await visit(root);
  return { reports, links };
}

function linkMismatch(
  child: Read,
  expected: { readonly started: SubagentStartedEvent; readonly depth: number; readonly deleted: boolean },
): string | undefined {
  const { started } = expected;
  const name = `child ${started.child} of task call ${started.tool_call_id}`;
  if (child.report.commits === 0)
    return expected.deleted ? undefined : `${name} has no log, and its call was not answered as deleted`;
  const task = child.task;
  if (!task) return `${name} has no subagent_task`;
  const call = task.parent_call;
  if (
    call.action_id !== started.action_id ||
    call.tool_call_id !== started.tool_call_id ||
    call.conversation !== started.conversation
  ) {
    return `${name} links to call ${call.tool_call_id} (action ${call.action_id}) of conversation ${call.conversation}`;
  }
  if (task.agent !== started.agent) return `${name} runs as sub-agent ${task.agent}, started as ${started.agent}`;
  if (task.depth !== expected.depth) return `${name} says depth ${task.depth}, its parent's is ${expected.depth - 1}`;
  return undefined;
}

async function readConversation(location: LogLocation, ref: ConversationRef, signal?: AbortSignal): Promise<Read> {
  const auditor = new ConversationAuditor(ref);
  let task: SubagentTaskEvent | undefined;
  const started: SubagentStartedEvent[] = [];
  const deletedAnswers = new Set<string>();
  for await (const entry of readSubject(location, ref, signal)) {
    if (entry.kind !== 'commit') {
      auditor.invalidMessage(entry.message);
      continue;
    }
    auditor.commit(entry.commit);
    for (const event of entry.commit.events) {
      if (event.type === 'subagent_task') task ??= event;
      else if (event.type === 'subagent_started') started.push(event);
      else if (event.type === 'observation' && event.tool_name === 'task' && event.details?.['status'] === 'deleted')
        deletedAnswers.add(event.tool_call_id);
    }
  }
  return { report: auditor.finish(), task, started, deletedAnswers };
}
