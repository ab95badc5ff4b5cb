import type { Delivery, EventSpan } from '@flotilla/runtime';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CondensationWatch } from './condensation-watch.js';

const ref = { tenant: 'acme', conversation: 'watched' };

/** A delivered commit as its headers describe it. */
function commit(streamSeq: number, span: EventSpan | undefined, types: readonly string[] = ['message']): Delivery {
  return {
    ref,
    logger: pino({ level: 'silent' }),
    subject: 'flotilla.conv.acme.watched',
    streamSeq,
    message: { subject: 'flotilla.conv.acme.watched', seq: streamSeq, data: new Uint8Array() },
    likelyTail: true,
    eventTypes: () => types,
    header: () => '',
    eventSpan: () => span,
    laterQueued: () => false,
    deliveryCount: 1,
    signal: new AbortController().signal,
  };
}

describe('CondensationWatch', () => {
  it('dismisses commits that follow what it saw from the first one, until a condensation is requested', () => {
    const watch = new CondensationWatch();
    expect(watch.nothingDue(commit(1, { firstSeq: 1, lastSeq: 2 }))).toBe(true);
    expect(watch.nothingDue(commit(5, { firstSeq: 3, lastSeq: 3 }, ['action', 'llm_usage']))).toBe(true);
    // a request goes the whole way, and so does every commit after it while it is open
    expect(watch.nothingDue(commit(6, { firstSeq: 4, lastSeq: 4 }, ['condensation_request']))).toBe(false);
    watch.note(ref, { streamSeq: 6, lastSeq: 4 }, true);
    expect(watch.nothingDue(commit(7, { firstSeq: 5, lastSeq: 5 }, ['observation']))).toBe(false);
    // answered: the condensation itself goes the whole way, then commits are dismissed again
    expect(watch.nothingDue(commit(8, { firstSeq: 6, lastSeq: 6 }, ['condensation']))).toBe(false);
    watch.note(ref, { streamSeq: 8, lastSeq: 6 }, false);
    expect(watch.nothingDue(commit(9, { firstSeq: 7, lastSeq: 8 }))).toBe(true);
  });

  it('with titles generated: a message may make a title owed, and while one is owed nothing is dismissed; once settled, commits are dismissed again', () => {
    const watch = new CondensationWatch({ titles: true });
    // no message yet: nothing can be owed by a commit without one
    expect(watch.nothingDue(commit(1, { firstSeq: 1, lastSeq: 1 }, ['state_change']))).toBe(true);
    expect(watch.nothingDue(commit(2, { firstSeq: 2, lastSeq: 3 }, ['message', 'state_change']))).toBe(false);
    watch.note(ref, { streamSeq: 2, lastSeq: 3 }, false, 'owed');
    expect(watch.nothingDue(commit(3, { firstSeq: 4, lastSeq: 6 }, ['system_prompt', 'llm_usage', 'action']))).toBe(false);
    watch.note(ref, { streamSeq: 3, lastSeq: 6 }, false, 'settled');
    expect(watch.nothingDue(commit(4, { firstSeq: 7, lastSeq: 7 }, ['message']))).toBe(true);
    // a conversation whose history had no user's text yet: its next message goes the whole way
    const other = { tenant: 'acme', conversation: 'other' };
    watch.note(other, { streamSeq: 5, lastSeq: 1 }, false, 'no_message');
    const delivery = (streamSeq: number, types: string[]): Delivery => ({ ...commit(streamSeq, { firstSeq: 2, lastSeq: 2 }, types), ref: other });
    expect(watch.nothingDue(delivery(6, ['message']))).toBe(false);
    expect(watch.nothingDue(delivery(6, ['state_change']))).toBe(true);
  });

  it('an owed title that could not land is tried again after a while (twice as long at each miss in a row, up to a limit) or at a status change, not at every commit of the run', () => {
    let now = 1_000;
    const watch = new CondensationWatch({ titles: true, titleRetryMs: 250, titleRetryMaxMs: 1_000, now: () => now });
    watch.note(ref, { streamSeq: 2, lastSeq: 3 }, false, 'owed');
    // the title was held at the step's commit (or it was not the tail): the run's next commits are let by
    watch.holdTitle(commit(3, { firstSeq: 4, lastSeq: 5 }, ['llm_usage', 'action']));
    expect(watch.nothingDue(commit(4, { firstSeq: 6, lastSeq: 6 }, ['execution_started']))).toBe(true);
    expect(watch.nothingDue(commit(5, { firstSeq: 7, lastSeq: 7 }, ['observation']))).toBe(true);
    // a status change may be the run coming to rest: tried at once
    expect(watch.nothingDue(commit(6, { firstSeq: 8, lastSeq: 8 }, ['state_change']))).toBe(false);
    // missed again: the next wait is twice as long
    watch.note(ref, { streamSeq: 6, lastSeq: 8 }, false, 'owed');
    watch.holdTitle(commit(6, { firstSeq: 8, lastSeq: 8 }, ['state_change']));
    now += 250;
    expect(watch.nothingDue(commit(7, { firstSeq: 9, lastSeq: 9 }, ['observation']))).toBe(true);
    now += 250;
    expect(watch.nothingDue(commit(8, { firstSeq: 10, lastSeq: 10 }, ['observation']))).toBe(false);
    // and so on up to the limit: 1 s after the third and the fourth miss
    let seq = 10;
    for (const wait of [1_000, 1_000]) {
      watch.note(ref, { streamSeq: seq - 2, lastSeq: seq }, false, 'owed');
      watch.holdTitle(commit(seq - 2, { firstSeq: seq, lastSeq: seq }, ['observation']));
      now += wait - 1;
      expect(watch.nothingDue(commit(seq - 1, { firstSeq: seq + 1, lastSeq: seq + 1 }, ['observation']))).toBe(true);
      now += 1;
      expect(watch.nothingDue(commit(seq, { firstSeq: seq + 2, lastSeq: seq + 2 }, ['observation']))).toBe(false);
      seq += 2;
    }
    // condensation requests are never let by, held title or not
    watch.note(ref, { streamSeq: seq - 2, lastSeq: seq }, false, 'owed');
    watch.holdTitle(commit(seq - 2, { firstSeq: seq, lastSeq: seq }, ['observation']));
    expect(watch.nothingDue(commit(seq - 1, { firstSeq: seq + 1, lastSeq: seq + 1 }, ['condensation_request']))).toBe(false);
    // a title that landed ends the count: a conversation owed one again (after a fork, say) starts at the first wait
    watch.note(ref, { streamSeq: seq - 1, lastSeq: seq + 1 }, false, 'settled');
    watch.note(ref, { streamSeq: seq, lastSeq: seq + 2 }, false, 'owed');
    watch.holdTitle(commit(seq, { firstSeq: seq + 2, lastSeq: seq + 2 }, ['observation']));
    now += 250;
    expect(watch.nothingDue(commit(seq + 1, { firstSeq: seq + 3, lastSeq: seq + 3 }, ['observation']))).toBe(false);
  });

  it('does not dismiss what it cannot place: a conversation met midway, a gap, an old commit, a foreign message', () => {
    const watch = new CondensationWatch();
    expect(watch.nothingDue(commit(10, { firstSeq: 20, lastSeq: 20 }))).toBe(false);
    watch.note(ref, { streamSeq: 10, lastSeq: 20 }, false);
    expect(watch.nothingDue(commit(12, { firstSeq: 22, lastSeq: 22 }))).toBe(false); // seq 21 was not seen here
    expect(watch.nothingDue(commit(9, { firstSeq: 21, lastSeq: 21 }))).toBe(false); // stored before the one noted
    expect(watch.nothingDue(commit(11, undefined, []))).toBe(false);
    expect(watch.nothingDue(commit(11, { firstSeq: 21, lastSeq: 21 }))).toBe(true);
  });
});
