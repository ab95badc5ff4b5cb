import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ActionEvent, Event } from '@flotilla/events';
import { toChatMessages } from './chat-messages.js';
import { play, scenarioArbitrary } from './testing/arbitrary-log.js';
import { longLog } from './testing/long-log.js';
import { TestLog } from './testing/test-log.js';
import { buildView, unmatchedActions, ViewBuilder, type ViewCheckpoint } from './view-builder.js';

/** A checkpoint as a reader gets it: written as JSON, read back. */
function stored(builder: ViewBuilder): ViewCheckpoint {
  return JSON.parse(JSON.stringify(builder.checkpoint())) as ViewCheckpoint;
}

function resumedAt(events: readonly Event[], cut: number): ViewBuilder {
  return ViewBuilder.resume(stored(new ViewBuilder().append(events.slice(0, cut)))).append(events.slice(cut));
}

describe('view checkpoints', () => {
  it('a checkpoint at any event, plus the events after it, gives the view of the whole log', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const { events } = play(scenario);
        const whole = buildView(events);
        for (let cut = 0; cut <= events.length; cut += 1) {
          const resumed = resumedAt(events, cut);
          expect(resumed.view(), `checkpoint after ${cut} of ${events.length} events`).toEqual(whole);
          expect(resumed.unmatchedActions()).toEqual(unmatchedActions(events));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('checkpoints taken from resumed builders chain, and a resumed builder shows the view it was taken at', () => {
    fc.assert(
      fc.property(
        scenarioArbitrary,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (scenario, a, b) => {
          const { events } = play(scenario);
          const [first, second] = [Math.floor(a * events.length), Math.floor(b * events.length)].sort(
            (x, y) => x - y,
          ) as [number, number];
          const atFirst = ViewBuilder.resume(stored(new ViewBuilder().append(events.slice(0, first))));
          expect(atFirst.view()).toEqual(buildView(events.slice(0, first)));
          const atSecond = ViewBuilder.resume(stored(atFirst.append(events.slice(first, second))));
          expect(atSecond.view()).toEqual(buildView(events.slice(0, second)));
          atSecond.append(events.slice(second));
          expect(atSecond.view()).toEqual(buildView(events));
          expect(toChatMessages(atSecond.view())).toEqual(toChatMessages(buildView(events)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('holds what the view still shows, not the history a condensation forgot', () => {
    const events = longLog(2_000);
    const view = buildView(events);
    const condensation = new TestLog().condense(
      view.items.slice(3, -10).map((item) => item.id),
      'what happened so far',
      3,
    );
    const log = [...events, { ...condensation, id: 'the-condensation', seq: events.length + 1 }];
    const builder = new ViewBuilder().append(log);
    const checkpoint = builder.checkpoint();
    // the condensed list: what the view shows, and what it may still show (here, the rest of a cut tool loop)
    const listed = new Set(checkpoint.items.map((item) => item.id));
    expect(
      builder
        .view()
        .items.slice(1)
        .every((item) => listed.has(item.id)),
    ).toBe(true);
    expect(checkpoint.items.length).toBeLessThan(20);
    expect(JSON.stringify(checkpoint).length).toBeLessThan(JSON.stringify(log).length / 50);
  });

  it('keeps what later events can still change: a duplicate answer to a call whose answer was forgotten, an action forgotten while it ran', () => {
    const log = new TestLog();
    log.system();
    log.user('go');
    const [kept] = log.batch() as [ActionEvent];
    const answer = log.observe(kept);
    const [running] = log.batch() as [ActionEvent];
    log.condense([answer.id, running.id]);
    const resumed = ViewBuilder.resume(stored(new ViewBuilder().append(log.events)));
    expect(resumed.unmatchedActions().map((action) => action.id)).toEqual([running.id]);
    const again = log.observe(kept, 'the same output, appended twice');
    log.observe(running);
    resumed.append(log.events.slice(-2));
    expect(resumed.view()).toEqual(buildView(log.events));
    expect(resumed.view().items.map((item) => item.id)).toContain(again.id);
    expect(resumed.unmatchedActions()).toEqual([]);
  });

  it('refuses a checkpoint that does not hold together', () => {
    const log = new TestLog();
    log.system();
    const [action] = log.batch() as [ActionEvent];
    log.observe(action);
    const checkpoint = new ViewBuilder().append(log.events).checkpoint();
    expect(() => ViewBuilder.resume({ ...checkpoint, items: checkpoint.items.slice(0, 1) })).toThrow(
      /not in the view's list/,
    );
  });
});
