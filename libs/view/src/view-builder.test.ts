import { describe, expect, it } from 'vitest';
import type { ActionEvent } from '@flotilla/events';
import { TestLog } from './testing/test-log.js';
import { buildView, unmatchedActions, ViewBuilder } from './view-builder.js';

const ids = (log: TestLog) => buildView(log.events).items.map((item) => item.id);

describe('buildView', () => {
  it('keeps only what the LLM reads, system prompt first', () => {
    const log = new TestLog();
    const user = log.user('hi');
    const system = log.system();
    log.noise();
    log.requestCondensation();
    expect(ids(log)).toEqual([system.id, user.id]);
  });

  it('never shows the model a secret change, even between a call and its result', () => {
    const log = new TestLog();
    const system = log.system();
    log.secretChanged('GITHUB_TOKEN');
    const user = log.user('push the branch');
    const [action] = log.batch() as [ActionEvent];
    log.secretChanged('GITHUB_TOKEN', 'removed');
    const result = log.observe(action);
    expect(ids(log)).toEqual([system.id, user.id, action.id, result.id]);
  });

  it('uses the latest system prompt, which no condensation can forget', () => {
    const log = new TestLog();
    log.system('old');
    const user = log.user('hi');
    const newer = log.system('new');
    log.condense([newer.id]);
    expect(ids(log)).toEqual([newer.id, user.id]);
  });

  it('forgets ids and puts the summary at its offset; a later condensation can forget that summary', () => {
    const log = new TestLog();
    const system = log.system();
    const [first, second, third, fourth] = [log.user('1'), log.agent('2'), log.user('3'), log.agent('4')];
    const condensation = log.condense([second.id, third.id], 'earlier: 2 and 3', 2);
    expect(ids(log)).toEqual([system.id, first.id, condensation.id, fourth.id]);
    expect(buildView(log.events).items[2]).toEqual({
      type: 'condensation_summary',
      id: condensation.id,
      summary: 'earlier: 2 and 3',
    });
    const rolled = log.condense([condensation.id, fourth.id], 'everything so far', 1);
    expect(ids(log)).toEqual([system.id, rolled.id, first.id]);
  });

  it('snaps a summary offset that falls inside a batch down to the batch start', () => {
    const log = new TestLog();
    const system = log.system();
    const user = log.user('go');
    const [a, b] = log.batch({ size: 2 }) as [ActionEvent, ActionEvent];
    const results = [log.observe(a), log.observe(b)];
    const condensation = log.condense([user.id], 'summary', 2);
    expect(ids(log)).toEqual([system, condensation, a, b, ...results].map((event) => event.id));
  });

  it('never splits a call from its result: orphans and unanswered calls are left out', () => {
    const log = new TestLog();
    log.system();
    const [kept] = log.batch();
    const keptResult = log.observe(kept!);
    const [lostCall] = log.batch();
    const orphan = log.observe(lostCall!);
    const [lostResultCall] = log.batch();
    const lostResult = log.observe(lostResultCall!);
    const [pending] = log.batch();
    log.condense([lostCall!.id, lostResult.id]);
    const view = ids(log);
    expect(view.slice(1)).toEqual([kept!.id, keptResult.id]);
    expect(view).not.toContain(orphan.id);
    expect(view).not.toContain(pending!.id);
    const answer = log.observe(pending!);
    expect(ids(log).slice(-2)).toEqual([pending!.id, answer.id]);
  });

  it('keeps a parallel batch whole or not at all, with results in call order', () => {
    const log = new TestLog();
    log.system();
    const [a, b, c] = log.batch({ size: 3 }) as [ActionEvent, ActionEvent, ActionEvent];
    const rc = log.observe(c);
    const ra = log.observe(a);
    expect(ids(log)).toHaveLength(1);
    const rb = log.reject(b);
    expect(ids(log).slice(1)).toEqual([a, b, c, ra, rb, rc].map((event) => event.id));
    log.condense([rb.id]);
    expect(ids(log)).toHaveLength(1);
  });

  it('keeps the first of duplicate results', () => {
    const log = new TestLog();
    log.system();
    const [call] = log.batch();
    const first = log.observe(call!, 'first');
    log.observe(call!, 'second');
    log.error(call!, 'late error');
    expect(ids(log).slice(1)).toEqual([call!.id, first.id]);
  });

  it('puts a message typed while tools ran after the batch results', () => {
    const log = new TestLog();
    log.system();
    const [a, b] = log.batch({ size: 2 }) as [ActionEvent, ActionEvent];
    const ra = log.observe(a);
    const typed = log.user('also check the tests');
    const rb = log.observe(b);
    expect(ids(log).slice(1)).toEqual([a, b, ra, rb, typed].map((event) => event.id));
  });

  it('drops the rest of a thinking tool loop a condensation cut, but keeps loops started after it', () => {
    const log = new TestLog();
    const system = log.system();
    const user = log.user('go');
    const [head] = log.batch({ thinking: true });
    const headResult = log.observe(head!);
    const [next] = log.batch();
    log.observe(next!);
    log.condense([head!.id, headResult.id], 'summary', 2);
    const afterCut = ids(log);
    expect(afterCut).not.toContain(next!.id);
    const [fresh] = log.batch({ thinking: true });
    const freshResult = log.observe(fresh!);
    expect(ids(log)).toEqual([system.id, user.id, afterCut[2]!, fresh!.id, freshResult.id]);
  });

  it('keeps the rest of a loop without thinking blocks when part of it is forgotten', () => {
    const log = new TestLog();
    log.system();
    const [first] = log.batch();
    const firstResult = log.observe(first!);
    const [second] = log.batch();
    const secondResult = log.observe(second!);
    log.condense([first!.id, firstResult.id]);
    expect(ids(log).slice(1)).toEqual([second!.id, secondResult.id]);
  });

  it('answers an invalid call with its agent error and shows free-standing errors', () => {
    const log = new TestLog();
    log.system();
    const [bad] = log.batch({ invalid: [0] });
    const error = log.error(bad!, 'unknown tool');
    const free = log.error(undefined, 'empty response');
    expect(ids(log).slice(1)).toEqual([bad!.id, error.id, free.id]);
  });

  it('flags a condensation request until a condensation answers it', () => {
    const log = new TestLog();
    log.user('hi');
    log.requestCondensation();
    expect(buildView(log.events).unhandledCondensationRequest).toBe(true);
    log.condense([]);
    expect(buildView(log.events).unhandledCondensationRequest).toBe(false);
  });
});

describe('unmatchedActions', () => {
  it('lists understood calls that no observation, error or rejection answered, in log order', () => {
    const log = new TestLog();
    const [observed, rejected, errored, open, invalid] = log.batch({ size: 5, invalid: [4] });
    log.observe(observed!);
    log.reject(rejected!);
    log.error(errored!);
    log.condense([open!.id]);
    expect(unmatchedActions(log.events).map((action) => action.id)).toEqual([open!.id]);
    expect(invalid!.input).toBeNull();
  });

  it('matches an agent error by tool call id when it names no action', () => {
    const log = new TestLog();
    const [call] = log.batch();
    const error = log.error(call!);
    const withoutActionId = { ...error, action_id: undefined };
    expect(unmatchedActions([...log.events.slice(0, -1), withoutActionId])).toEqual([]);
  });
});

describe('ViewBuilder', () => {
  it('ignores replayed events and returns the same view until something is appended', () => {
    const log = new TestLog();
    log.system();
    log.user('hi');
    const builder = new ViewBuilder().append(log.events);
    const view = builder.view();
    builder.append(log.events);
    expect(builder.view()).toBe(view);
    log.agent('hello');
    builder.append(log.events.slice(-1));
    expect(builder.view().items).toHaveLength(3);
  });
});
