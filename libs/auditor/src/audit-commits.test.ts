import { describe, expect, it } from 'vitest';
import type { ConversationStatus } from '@flotilla/events';
import type { StoredCommit } from '@flotilla/log';
import { auditCommits } from './audit-commits.js';
import type { AuditReport } from './audit-report.js';
import { AuditRule } from './audit-rule.js';
import { AuditorError } from './errors.js';
import { CommitList } from './test-support/commit-list.js';
import { cleanConversation, draftsFor } from './test-support/drafts.js';

const ref = { tenant: 'acme', conversation: 'c1' };
const d = draftsFor(ref);

function rules(report: AuditReport): string[] {
  return report.violations.map((violation) => violation.rule);
}

/** A conversation that was asked to run. */
function running(): CommitList {
  return new CommitList(ref).addAll([[d.userMessage(), d.status('running')]]);
}

describe('auditCommits: a clean conversation', () => {
  it('passes, with its figures', () => {
    const list = new CommitList(ref).addAll(cleanConversation(d));
    const report = auditCommits(list.commits);
    expect(report.violations).toEqual([]);
    expect(report).toMatchObject({
      conversation: ref,
      commits: 13,
      events: list.commits.at(-1)!.lastSeq,
      finalStatus: 'idle',
      pending: [],
      tail: { streamSeq: list.commits.at(-1)!.streamSeq, lastSeq: list.commits.at(-1)!.lastSeq },
      summary: {
        actions: 4,
        observations: 3,
        errors: 1,
        conversationErrors: 0,
        rejections: 0,
        steps: 4,
        condensations: 1,
        invalidMessages: 0,
      },
    });
  });

  it('needs the conversation when there are no commits', () => {
    expect(() => auditCommits([])).toThrow(AuditorError);
    expect(auditCommits([], { conversation: ref })).toMatchObject({
      commits: 0,
      events: 0,
      finalStatus: 'idle',
      violations: [],
    });
  });

  it('reports pending actions without a violation while running, paused or waiting for confirmation', () => {
    for (const status of ['running', 'paused', 'waiting_for_confirmation'] as const) {
      const list = running();
      const action = d.action();
      list.add([d.usage(), action]);
      if (status !== 'running') list.add([d.status(status)]);
      const report = auditCommits(list.commits);
      expect(report.violations, status).toEqual([]);
      expect(report.pending).toEqual([
        expect.objectContaining({ actionId: action.id, toolCallId: action.tool_call_id, started: false }),
      ]);
    }
  });

  it('accepts a rejected confirmation that returns to idle', () => {
    const list = running();
    const action = d.action();
    list.addAll([
      [d.usage(), action, d.status('waiting_for_confirmation')],
      [d.rejection(action), d.status('idle')],
    ]);
    expect(auditCommits(list.commits).violations).toEqual([]);
  });
});

describe('auditCommits: positions', () => {
  it('reports a duplicate event id', () => {
    const message = d.userMessage();
    const list = new CommitList(ref).addAll([[message, d.status('running')], [message]]);
    expect(rules(auditCommits(list.commits))).toEqual([AuditRule.DuplicateEventId]);
  });

  it('reports a gap in seqs once, then resynchronises', () => {
    const list = running();
    list.add([d.userMessage()], { firstSeq: 5 });
    list.add([d.userMessage()]);
    const report = auditCommits(list.commits);
    expect(rules(report)).toEqual([AuditRule.SeqNotContiguous]);
    expect(report.violations[0]).toMatchObject({ seq: 5, detail: expect.stringContaining('gap') });
  });

  it('reports an overlap', () => {
    const list = running();
    list.add([d.userMessage()], { firstSeq: 2 });
    expect(report(list)).toEqual([AuditRule.SeqNotContiguous]);
    expect(auditCommits(list.commits).violations[0]!.detail).toContain('overlap');
  });

  it('reports a log that does not start at seq 1', () => {
    const list = new CommitList(ref);
    list.add([d.userMessage()], { firstSeq: 3 });
    expect(report(list)).toEqual([AuditRule.SeqNotContiguous]);
  });

  it('reports stream sequences that do not increase, and a duplicate commit id', () => {
    const list = running();
    const first = list.commits[0]!;
    list.add([d.userMessage()], { streamSeq: first.streamSeq, id: first.id });
    expect(report(list).sort()).toEqual([AuditRule.DuplicateCommitId, AuditRule.StreamSeqNotIncreasing].sort());
  });

  it('reports a commit whose range disagrees with its events, an empty commit, and a foreign conversation', () => {
    const list = running();
    const last = list.add([d.userMessage()]);
    const broken: StoredCommit[] = [
      ...list.commits.slice(0, -1),
      { ...last, lastSeq: last.lastSeq + 1 },
      {
        ...last,
        streamSeq: last.streamSeq + 10,
        id: 'empty',
        firstSeq: last.lastSeq + 2,
        lastSeq: last.lastSeq + 1,
        events: [],
      },
    ];
    expect(rules(auditCommits(broken))).toEqual([AuditRule.CommitRangeMismatch, AuditRule.EmptyCommit]);
    const other = new CommitList({ tenant: 'acme', conversation: 'other' }).addAll([
      [draftsFor({ tenant: 'acme', conversation: 'other' }).userMessage()],
    ]);
    expect(rules(auditCommits(other.commits, { conversation: ref }))).toEqual([
      AuditRule.WrongConversation,
      AuditRule.WrongConversation,
    ]);
  });

  it('reports the invalid messages the reader saw', () => {
    const list = running();
    const result = auditCommits(list.commits, {
      invalidMessages: [
        { streamSeq: 1, reason: 'foreign message: no Flotilla-Protocol header' },
        { streamSeq: 2, reason: 'v 2', unsupportedVersion: true },
      ],
    });
    expect(rules(result)).toEqual([AuditRule.InvalidMessage, AuditRule.UnsupportedProtocolVersion]);
    expect(result.summary.invalidMessages).toBe(2);
  });
});

function report(list: CommitList): string[] {
  return rules(auditCommits(list.commits));
}

describe('auditCommits: actions and results', () => {
  it('reports an action answered twice', () => {
    const list = running();
    const action = d.action();
    list.addAll([[d.usage(), action], [d.started(action)], [d.observation(action)], [d.agentError(action)]]);
    expect(report(list)).toEqual([AuditRule.ActionAnsweredTwice]);
  });

  it('reports an action executed twice (two observations)', () => {
    const list = running();
    const action = d.action();
    list.addAll([[d.usage(), action], [d.started(action)], [d.observation(action)], [d.observation(action)]]);
    expect(report(list)).toEqual([AuditRule.ActionExecutedTwice]);
  });

  it('reports an action never answered at rest', () => {
    const list = running();
    const action = d.action();
    list.addAll([[d.usage(), action], [d.started(action)], [d.status('error')]]);
    const result = auditCommits(list.commits);
    expect(rules(result)).toEqual([AuditRule.PendingAtRest]);
    expect(result.violations[0]).toMatchObject({
      seq: list.commits[1]!.firstSeq + 1,
      detail: expect.stringContaining('rests in error'),
    });
    expect(result.pending).toEqual([expect.objectContaining({ started: true })]);
  });

  it('reports a result for an unknown call, and a result before its action', () => {
    const list = running();
    const ghost = d.action();
    list.addAll([[d.agentError(ghost)]]);
    expect(report(list)).toEqual([AuditRule.ResultForUnknownCall]);
    const early = running();
    const late = d.action();
    early.addAll([[d.rejection(late)], [d.usage(), late], [d.rejection(late)]]);
    expect(rules(auditCommits(early.commits))).toEqual([AuditRule.ResultBeforeAction]);
  });

  it('reports a result naming another action', () => {
    const list = running();
    const [one, two] = [d.action(), d.action()];
    list.addAll([
      [d.usage(), one, two],
      [d.started(one, two)],
      [d.observation(one, { action_id: two.id }), d.observation(two)],
    ]);
    expect(report(list)).toEqual([AuditRule.ResultActionMismatch]);
  });

  it('reports an unparsed action not answered in its own commit', () => {
    const list = running();
    const broken = d.action('nope', null);
    list.addAll([[d.usage(), broken], [d.agentError(broken)]]);
    expect(report(list)).toEqual([AuditRule.UnparsedActionUnanswered]);
  });

  it('reports a reused tool_call_id', () => {
    const list = running();
    const first = d.action('terminal', { command: 'ls' }, 'call_1');
    const second = d.action('terminal', { command: 'pwd' }, 'call_1');
    list.addAll([
      [d.usage(), first],
      [d.started(first)],
      [d.observation(first)],
      [d.usage(), second],
      [d.started(second)],
      [d.observation(second)],
    ]);
    expect(report(list)).toEqual([AuditRule.DuplicateToolCallId]);
  });

  it('reports observations without a recorded start, including one recorded in the same commit', () => {
    const list = running();
    const [one, two] = [d.action(), d.action()];
    list.addAll([[d.usage(), one, two], [d.observation(one)], [d.started(two), d.observation(two)]]);
    expect(report(list)).toEqual([AuditRule.ObservationWithoutStart, AuditRule.ObservationWithoutStart]);
  });

  it('reports execution started twice, of an unknown action, after a result, and while not running', () => {
    const list = running();
    const action = d.action();
    list.addAll([[d.usage(), action], [d.started(action)], [d.started(action)]]);
    expect(report(list)).toEqual([AuditRule.ExecutionStartedTwice]);

    const unknown = running();
    unknown.addAll([[d.started(d.action())]]);
    expect(report(unknown)).toEqual([AuditRule.ExecutionOfUnknownAction]);

    const answered = running();
    const rejected = d.action();
    answered.addAll([[d.usage(), rejected], [d.rejection(rejected)], [d.started(rejected)]]);
    expect(report(answered)).toEqual([AuditRule.ExecutionAfterResult]);

    const paused = running();
    const held = d.action();
    paused.addAll([[d.usage(), held], [d.pause(), d.status('paused')], [d.started(held)]]);
    expect(report(paused)).toEqual([AuditRule.ExecutionWhileNotRunning]);
  });
});

describe('auditCommits: status and steps', () => {
  it('reports an illegal status transition', () => {
    const list = new CommitList(ref).addAll([[d.userMessage(), d.status('finished')]]);
    const result = auditCommits(list.commits);
    expect(rules(result)).toEqual([AuditRule.IllegalTransition]);
    expect(result.violations[0]!.detail).toBe('idle → finished');
  });

  it('reports a user message that does not reopen a finished conversation', () => {
    const list = running();
    list.addAll([[d.usage(), d.assistantMessage(), d.status('finished')], [d.userMessage('more')]]);
    expect(report(list)).toEqual([AuditRule.UserMessageNotReopened]);
    const reopened = running();
    reopened.addAll([
      [d.usage(), d.assistantMessage(), d.status('finished')],
      [d.userMessage('more'), d.status('running')],
    ]);
    expect(report(reopened)).toEqual([]);
  });

  it('reports a step on unanswered actions (two steps on the same tail)', () => {
    const list = running();
    const action = d.action();
    list.addAll([
      [d.usage(), action],
      [d.usage(), d.action()],
    ]);
    const result = auditCommits(list.commits);
    expect(rules(result)).toEqual([AuditRule.StepOnUnansweredActions]);
    expect(result.violations[0]!.streamSeq).toBe(list.commits[2]!.streamSeq);
  });

  it('reports a step while not running', () => {
    const list = new CommitList(ref).addAll([[d.userMessage()], [d.usage(), d.assistantMessage()]]);
    expect(report(list)).toEqual([AuditRule.StepWhileNotRunning]);
  });

  it('reports a step that skips a requested condensation', () => {
    const list = running();
    list.addAll([[d.condensationRequest()], [d.usage(), d.assistantMessage(), d.status('finished')]]);
    expect(report(list)).toEqual([AuditRule.StepBeforeCondensation]);
  });

  it('reports a second system prompt', () => {
    const list = running();
    list.addAll([
      [d.systemPrompt(), d.usage(), d.assistantMessage(), d.status('finished')],
      [d.userMessage(), d.status('running')],
      [d.systemPrompt(), d.usage(), d.assistantMessage(), d.status('finished')],
    ]);
    expect(report(list)).toEqual([AuditRule.SystemPromptRepeated]);
  });
});

describe('auditCommits: the status machine', () => {
  const statuses: ConversationStatus[] = [
    'idle',
    'running',
    'paused',
    'waiting_for_confirmation',
    'finished',
    'error',
    'stuck',
  ];
  const allowed: Record<ConversationStatus, ConversationStatus[]> = {
    idle: ['running'],
    running: ['paused', 'waiting_for_confirmation', 'finished', 'error', 'stuck', 'idle'],
    paused: ['running'],
    waiting_for_confirmation: ['running', 'idle'],
    finished: ['idle', 'running'],
    stuck: ['idle', 'running'],
    error: ['running', 'idle'],
  };
  for (const from of statuses) {
    for (const to of statuses) {
      const legal = from === to || allowed[from].includes(to);
      it(`${from} → ${to} is ${legal ? 'allowed' : 'refused'}`, () => {
        const list = new CommitList(ref);
        if (from !== 'idle') list.add([d.status('running')]);
        if (from !== 'idle' && from !== 'running') list.add([d.status(from)]);
        list.add([d.status(to)]);
        expect(report(list)).toEqual(legal ? [] : [AuditRule.IllegalTransition]);
      });
    }
  }
});
