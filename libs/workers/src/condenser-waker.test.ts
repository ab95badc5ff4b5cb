import type { NextWork } from '@flotilla/agent';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import type { CondenserWakeupReason, WakeOptions } from '@flotilla/runtime';
import { describe, expect, it } from 'vitest';
import { CondenserWaker } from './condenser-waker.js';

const ref: ConversationRef = { tenant: 'acme', conversation: 'c1' };
const user = { ...ref, source: 'user' as const };
const system = { ...ref, source: 'system' as const };
const REST: NextWork = { kind: 'rest' };
const CONDENSE: NextWork = { kind: 'condense' };

/** A log as events, and a waker whose wake-ups are recorded (or fail, to show they are awaited). */
function fixture(wantsTitles = true) {
  const events: Event[] = [];
  const woken: [CondenserWakeupReason, number, WakeOptions | undefined][] = [];
  let failing = false;
  const waker = new CondenserWaker({
    wakeups: {
      wake: async (_ref, reason, at, options) => {
        if (failing) throw new Error('no JetStream');
        woken.push([reason, at, options]);
      },
    },
    wantsTitles: () => wantsTitles,
  });
  return {
    woken,
    fail: () => (failing = true),
    append: (...drafts: EventDraft[]) =>
      events.push(...drafts.map((draft) => ({ ...draft, seq: events.length + 1 }) as Event)),
    /** The step worker decided `work` at the tail as it is now (its stream sequence `streamSeq`). */
    decided: (work: NextWork, streamSeq: number) =>
      waker.decided(ref, { streamSeq, lastSeq: events.length }, [...events], undefined, work, () => '00-trace-span-01'),
  };
}

const message = (text: string) => draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text }] });

describe('CondenserWaker', () => {
  it('wakes the condenser for a title once per first message, as soon as one is in, and no more once it is set', async () => {
    const f = fixture();
    f.append(draftEvent(system, 'state_change', { status: 'idle', reason: 'created' }));
    await f.decided(REST, 1);
    expect(f.woken).toEqual([]);
    f.append(message('Fix the flaky login test'));
    await f.decided(REST, 2);
    expect(f.woken).toEqual([['title', 2, { traceparent: '00-trace-span-01' }]]);
    // every later tail of the run: the condenser keeps the wake-up until the title is in the log
    f.append(message('and the docs'));
    await f.decided(REST, 3);
    await f.decided(REST, 4);
    expect(f.woken).toHaveLength(1);
  });

  it('puts no title wake-up where the spec wants none, or a title is set', async () => {
    const off = fixture(false);
    off.append(message('Fix it'));
    await off.decided(REST, 1);
    expect(off.woken).toEqual([]);
    const given = fixture();
    given.append(
      draftEvent(system, 'state_change', { status: 'idle', reason: 'created', title: 'Given' }),
      message('Fix it'),
    );
    await given.decided(REST, 1);
    expect(given.woken).toEqual([]);
  });

  it('wakes the condenser for a condensation at each tail that waits for one, and fails (no ack) when the wake-up cannot be stored', async () => {
    const f = fixture(false);
    f.append(message('Go'), draftEvent(system, 'condensation_request', { reason: 'the view is too large' }));
    await f.decided(CONDENSE, 7);
    await f.decided(CONDENSE, 9);
    expect(f.woken.map(([reason, at]) => [reason, at])).toEqual([
      ['condense', 7],
      ['condense', 9],
    ]);
    f.fail();
    await expect(f.decided(CONDENSE, 10)).rejects.toThrow('no JetStream');
  });
});
