import { draftEvent, type EventDraft } from '@flotilla/events';
import { describe, expect, it } from 'vitest';
import { auditCommits } from './audit-commits.js';
import { AuditRule } from './audit-rule.js';
import { CommitList } from './test-support/commit-list.js';
import { draftsFor } from './test-support/drafts.js';

const ref = { tenant: 'acme', conversation: 'lead' };
const d = draftsFor(ref);
const system = { ...ref, source: 'system' as const };
const started = (action: ReturnType<typeof d.action>, child = 'sub-1'): EventDraft =>
  draftEvent(system, 'subagent_started', {
    action_id: action.id,
    tool_call_id: action.tool_call_id,
    agent: 'researcher',
    child,
  });
const task = (conversation: string) =>
  draftEvent({ tenant: 'acme', conversation, source: 'system' }, 'subagent_task', {
    parent_call: { conversation: 'lead', action_id: 'a1', tool_call_id: 'call_1' },
    agent: 'researcher',
    depth: 1,
    workspace: 'lead',
  });

const rules = (list: CommitList): string[] => auditCommits(list.commits).violations.map((violation) => violation.rule);

describe('the auditor and sub-agents', () => {
  it('passes a parent whose task calls were started, waited for, and answered together', () => {
    const [a, b] = [
      d.action('task', { agent: 'researcher', prompt: 'one' }),
      d.action('task', { agent: 'researcher', prompt: 'two' }),
    ];
    const list = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a!, b!],
      [started(a!, 'sub-1'), started(b!, 'sub-2')],
      [d.observation(a!), d.observation(b!)],
      [d.usage(), d.assistantMessage(), d.status('finished')],
    ]);
    expect(rules(list)).toEqual([]);
    // waiting for its children, paused: pending calls are held, not abandoned
    const waiting = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a!],
      [started(a!)],
      [d.pause(), d.status('paused')],
    ]);
    expect(auditCommits(waiting.commits)).toMatchObject({
      violations: [],
      pending: [{ toolName: 'task', started: true }],
    });
  });

  it('names a call answered without a child, a second child, a child for no task call, a child after the answer or while not running, and a tool runner running a task call', () => {
    const a = d.action('task', { agent: 'researcher', prompt: 'one' });
    const terminal = d.action('terminal');
    const unstarted = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a],
      [d.observation(a)],
    ]);
    expect(rules(unstarted)).toEqual([AuditRule.ObservationWithoutStart]);
    expect(auditCommits(unstarted.commits).violations[0]!.detail).toContain('without a subagent_started');
    const twice = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a],
      [started(a, 'sub-1')],
      [started(a, 'sub-2')],
    ]);
    expect(rules(twice)).toEqual([AuditRule.SubagentStartedTwice]);
    const notTask = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), terminal],
      [started(terminal)],
    ]);
    expect(rules(notTask)).toEqual([AuditRule.SubagentOfUnknownCall]);
    const late = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a],
      [d.agentError(a)],
      [started(a)],
    ]);
    expect(rules(late)).toEqual([AuditRule.SubagentAfterResult]);
    const paused = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a],
      [d.pause(), d.status('paused')],
      [started(a)],
    ]);
    expect(rules(paused)).toEqual([AuditRule.SubagentWhileNotRunning]);
    const executed = new CommitList(ref).addAll([
      [d.userMessage(), d.status('running')],
      [d.usage(), a],
      [d.started(a)],
    ]);
    expect(rules(executed)).toEqual([AuditRule.DelegationExecuted]);
  });

  it("places a sub-agent's subagent_task in its first commit, once", () => {
    const child = { tenant: 'acme', conversation: 'sub-1' };
    const c = draftsFor(child);
    expect(
      rules(
        new CommitList(child).addAll([[c.status('idle'), task('sub-1'), c.userMessage('one'), c.status('running')]]),
      ),
    ).toEqual([]);
    expect(rules(new CommitList(child).addAll([[c.status('idle')], [task('sub-1')]]))).toEqual([
      AuditRule.SubagentTaskMisplaced,
    ]);
    expect(rules(new CommitList(child).addAll([[c.status('idle'), task('sub-1'), task('sub-1')]]))).toEqual([
      AuditRule.SubagentTaskMisplaced,
    ]);
  });
});
