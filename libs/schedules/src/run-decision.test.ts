import { describe, expect, it } from 'vitest';
import { claimRun, decideRun, recordRun, runConversationId, type DeliveredRun } from './run-decision.js';
import type { StoredSchedule } from './stored-schedule.js';

const now = new Date('2026-12-06T03:00:10.000Z');
const schedule = (overrides: Partial<StoredSchedule> = {}): StoredSchedule => ({
  v: 1,
  id: `sch_${'a'.repeat(32)}`,
  tenant: 'acme',
  when: { cron: '*/5 * * * * *', time_zone: 'Europe/Paris' },
  action: { type: 'send_message', conversation: 'c1', text: 'hi' },
  missed_runs: 'run_once',
  description: null,
  status: 'active',
  created_at: '2026-12-06T02:00:00.000Z',
  updated_at: '2026-12-06T02:00:00.000Z',
  next_run_at: null,
  runs: 0,
  last_run: null,
  generation: 2,
  handled_seq: 10,
  claimed_seq: null,
  ...overrides,
});
const run = (
  overrides: Partial<DeliveredRun> = {},
  kind: 'scheduled' | 'manual' | 'caught_up' = 'scheduled',
): DeliveredRun => ({
  seq: 11,
  message: { v: 1, tenant: 'acme', schedule: `sch_${'a'.repeat(32)}`, generation: 2, kind },
  dueAt: new Date('2026-12-06T03:00:09.000Z'),
  next: '2026-12-06T04:00:15+01:00',
  ...overrides,
});

describe('what a gateway does with a run', () => {
  it('acts on a fresh run of an active schedule', () => {
    expect(decideRun(schedule(), run(), now, 60_000)).toEqual({ kind: 'act' });
  });

  it('drops a run of a schedule that is gone, paused, of an older generation, or taken already', () => {
    expect(decideRun(undefined, run(), now, 60_000)).toEqual({ kind: 'drop', reason: 'no_schedule' });
    expect(decideRun(schedule({ status: 'paused' }), run(), now, 60_000)).toEqual({ kind: 'drop', reason: 'paused' });
    expect(decideRun(schedule({ generation: 3 }), run(), now, 60_000)).toEqual({ kind: 'drop', reason: 'stale' });
    expect(decideRun(schedule({ handled_seq: 11 }), run(), now, 60_000)).toEqual({ kind: 'drop', reason: 'taken' });
    expect(decideRun(schedule({ handled_seq: 12 }), run(), now, 60_000)).toEqual({ kind: 'drop', reason: 'taken' });
  });

  it('a run asked for is taken even when the schedule is paused', () => {
    expect(decideRun(schedule({ status: 'paused' }), run({}, 'manual'), now, 60_000)).toEqual({ kind: 'act' });
  });

  it('a claimed run delivered again: a message is not sent twice, a conversation (its id derived from the run) is made again', () => {
    expect(decideRun(schedule({ claimed_seq: 11 }), run(), now, 60_000)).toEqual({ kind: 'interrupted' });
    const creating = schedule({ claimed_seq: 11, action: { type: 'create_conversation', message: 'go' } });
    expect(decideRun(creating, run(), now, 60_000)).toEqual({ kind: 'act' });
    expect(runConversationId(creating, 11)).toBe(runConversationId(creating, 11));
    expect(runConversationId(creating, 11)).not.toBe(runConversationId(creating, 12));
  });

  it('missed_runs: skip skips a run taken later than the grace; run_once takes it; a gateway-made run is never skipped', () => {
    const late = run({ dueAt: new Date('2026-12-06T02:58:00.000Z') });
    expect(decideRun(schedule({ missed_runs: 'skip' }), late, now, 60_000)).toMatchObject({
      kind: 'skip',
      reason: expect.stringContaining('130 s'),
    });
    expect(decideRun(schedule({ missed_runs: 'skip' }), run(), now, 60_000)).toEqual({ kind: 'act' });
    expect(decideRun(schedule({ missed_runs: 'run_once' }), late, now, 60_000)).toEqual({ kind: 'act' });
    expect(
      decideRun(
        schedule({ missed_runs: 'skip' }),
        { ...late, message: { ...late.message, kind: 'caught_up' } },
        now,
        60_000,
      ),
    ).toEqual({ kind: 'act' });
  });

  it("a one-time run is due at its schedule's time, however late nats-server fired it (it fires a past @at once when it starts)", () => {
    const once = schedule({ missed_runs: 'skip', when: { at: '2026-12-06T02:50:00.000Z' } });
    const firedAtStart = run({ dueAt: new Date('2026-12-06T03:00:09.000Z'), next: 'purge' });
    expect(decideRun(once, firedAtStart, now, 60_000)).toMatchObject({
      kind: 'skip',
      reason: expect.stringContaining('2026-12-06T02:50:00.000Z'),
    });
    expect(decideRun({ ...once, missed_runs: 'run_once' }, firedAtStart, now, 60_000)).toEqual({ kind: 'act' });
    expect(
      recordRun(
        { ...once, missed_runs: 'run_once' },
        firedAtStart,
        { outcome: 'succeeded', conversation: 'c1', error: null },
        now,
      ).last_run?.due_at,
    ).toBe('2026-12-06T02:50:00.000Z');
  });

  it('recording a run counts it, clears the claim, keeps the last sequence and the next run in UTC; a one-time run completes its schedule', () => {
    const claimed = claimRun(schedule(), 11, now);
    expect(claimed.claimed_seq).toBe(11);
    const recorded = recordRun(claimed, run(), { outcome: 'succeeded', conversation: 'c1', error: null }, now);
    expect(recorded).toMatchObject({
      runs: 1,
      handled_seq: 11,
      claimed_seq: null,
      next_run_at: '2026-12-06T03:00:15.000Z',
      status: 'active',
    });
    expect(recorded.last_run).toEqual({
      due_at: '2026-12-06T03:00:09.000Z',
      handled_at: now.toISOString(),
      outcome: 'succeeded',
      conversation: 'c1',
      error: null,
    });
    const once = recordRun(
      schedule({ when: { at: '2026-12-06T03:00:09.000Z' } }),
      run({ next: 'purge' }),
      { outcome: 'succeeded', conversation: 'c1', error: null },
      now,
    );
    expect(once).toMatchObject({ status: 'completed', next_run_at: null });
    // a caught-up run clears the overdue announcement (the server's next run sets a new one)
    expect(
      recordRun(
        schedule({ next_run_at: '2026-12-06T02:00:00.000Z' }),
        run({ next: undefined }, 'caught_up'),
        { outcome: 'succeeded', conversation: 'c1', error: null },
        now,
      ).next_run_at,
    ).toBeNull();
  });
});
