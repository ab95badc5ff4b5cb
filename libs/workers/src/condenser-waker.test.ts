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
  let now = 0;
  const waker = new CondenserWaker({
    wakeups: {
      wake: async (_ref, reason, at, options) => {
        if (failing) throw new Error('no JetStream');
        woken.push([reason, at, options]);
      },
    },
    wantsTitles: () => wantsTitles,
    titleRetryMs: 2_000,
    now: () => now,
  });
  return {
    woken,
    fail: () => (failing = true),
    advance: (ms: number) => (now += ms),
    append: (...drafts: EventDraft[]) => events.push(...drafts.map((draft) => ({ ...draft, seq: events.length + 1 }) as Event)),
    /** The step worker decided `work` at the tail as it is now (its stream sequence `streamSeq`). */
    decided: (work: NextWork, streamSeq: number) => waker.decided(ref, { streamSeq, lastSeq: events.length }, [...events], undefined, work, () => '00-trace-span-01'),
    /** The step worker appended a step's actions at `streamSeq`. */
    actions: (streamSeq: number) => waker.actionsAppended(ref, streamSeq, [...events], undefined, () => ''),
  };
}

const message = (text: string) => draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text }] });
const STEP: NextWork = { kind: 'step' };

describe('CondenserWaker', () => {
  it("wakes the condenser for a title as soon as one is owed, then where no step is due: after a step's actions (at most every 2 s) and at rest", async () => {
    const f = fixture();
    f.append(draftEvent(system, 'state_change', { status: 'idle', reason: 'created' }));
    await f.decided(REST, 1);
    expect(f.woken).toEqual([]);
    f.append(message('Fix the flaky login test'));
    await f.decided(STEP, 2);
    expect(f.woken).toEqual([['title', 2, { traceparent: '00-trace-span-01' }]]);
    // further tails with a step due: the title could not land there
    await f.decided(STEP, 5);
    expect(f.woken).toHaveLength(1);
    // the step's actions: tools run, no step is due
    await f.actions(3);
    await f.actions(6);
    f.advance(2_000);
    await f.actions(9);
    expect(f.woken.map(([reason, at]) => [reason, at])).toEqual([
      ['title', 2],
      ['title', 3],
      ['title', 9],
    ]);
    // at rest
    await f.decided(REST, 12);
    expect(f.woken.at(-1)?.slice(0, 2)).toEqual(['title', 12]);
    // once a title is set, nothing more
    f.append(draftEvent(system, 'state_change', { title: 'Flaky login', reason: 'generated from the first message' }));
    f.advance(10_000);
    await f.actions(15);
    await f.decided(REST, 16);
    expect(f.woken).toHaveLength(4);
  });

  it('puts no title wake-up where the spec wants none, or a title is set', async () => {
    const off = fixture(false);
    off.append(message('Fix it'));
    await off.decided(REST, 1);
    await off.actions(2);
    expect(off.woken).toEqual([]);
    const given = fixture();
    given.append(draftEvent(system, 'state_change', { status: 'idle', reason: 'created', title: 'Given' }), message('Fix it'));
    await given.decided(REST, 1);
    expect(given.woken).toEqual([]);
  });

  it('wakes the condenser for a condensation at each tail that waits for one, and fails (no ack) when the wake-up cannot be stored; a wake-up after actions is best effort', async () => {
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
    const titled = fixture();
    titled.append(message('Go'));
    titled.fail();
    await expect(titled.actions(3)).resolves.toBeUndefined();
  });
});
