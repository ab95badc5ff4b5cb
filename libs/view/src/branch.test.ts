import { isValidEvent, type Event, type EventDraft } from '@flotilla/events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planBranch } from './branch.js';
import { toChatMessages } from './chat-messages.js';
import { play, scenarioArbitrary } from './testing/arbitrary-log.js';
import { TestLog } from './testing/test-log.js';
import type { View } from './types.js';
import { buildView, unmatchedActions } from './view-builder.js';

const context = { tenant: 'acme', conversation: 'c1', now: () => new Date('2026-02-01T00:00:00.000Z') };

/** `drafts` appended after `log` as one commit: seqs given, ids as drafted. */
function appended(log: readonly Event[], drafts: readonly EventDraft[]): Event[] {
  return [...log, ...drafts.map((draft, index) => ({ ...draft, seq: log.length + index + 1 }) as Event)];
}

function branchEvent(
  log: readonly Event[],
  from: number,
  forgotten: readonly string[],
  copied: number,
  conversation = 'c1',
): EventDraft {
  return {
    v: 4,
    id: `branch-${log.length}`,
    type: 'branch',
    tenant: 'acme',
    conversation,
    source: 'user',
    timestamp: '2026-02-01T00:00:00.000Z',
    kind: conversation === 'c1' ? 'rewind' : 'fork',
    from: { conversation: 'c1', seq: from },
    forgotten_event_ids: [...forgotten],
    copied,
  };
}

/**
 * What the model is sent for a view. A rewind's copies carry their batch's response id renamed
 * (`~r1`, see planBranch); response ids never reach a provider, so the suffix is taken off.
 */
const forModel = (view: View) =>
  toChatMessages(view).map((message) =>
    'responseId' in message && message.responseId !== undefined
      ? { ...message, responseId: message.responseId.replace(/~r1$/, '') }
      : message,
  );

/** The seqs of a log where no call waits for its result: the points a branch may start from. */
const restPoints = (events: readonly Event[]): number[] =>
  events.flatMap((event, index) => (unmatchedActions(events.slice(0, index + 1)).length === 0 ? [event.seq] : []));

describe('planBranch', () => {
  it('a rewind to any rest point of any log gives the view of that point, whatever condensations came after', () => {
    fc.assert(
      fc.property(scenarioArbitrary, fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), (scenario, at) => {
        const { events } = play({ ...scenario, trailing: [] });
        const points = restPoints(events);
        const to = points[Math.floor(at * points.length)];
        if (to === undefined) return;
        const target = buildView(events.slice(0, to));
        const plan = planBranch(buildView(events), target, context, { renameBatches: 'r1' });
        const after = appended(events, [
          branchEvent(events, to, plan.forgottenEventIds, plan.copies.length),
          ...plan.copies,
        ]);
        expect(forModel(buildView(after))).toEqual(forModel(target));
        // and what follows the branch builds on it as it would have on that point
        const next = new TestLog();
        next.user('now the other way');
        const message = next.events[0]!;
        expect(forModel(buildView([...after, { ...message, id: 'next', seq: after.length + 1 }]))).toEqual(
          forModel(buildView([...events.slice(0, to), { ...message, id: 'next', seq: to + 1 }])),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('a fork copies the whole view at its point into a new log, system prompt included, as valid events', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const { events } = play({ ...scenario, trailing: [] });
        const target = buildView(events);
        const plan = planBranch(undefined, target, { ...context, conversation: 'child' });
        expect(plan.forgottenEventIds).toEqual([]);
        const child = appended(
          [],
          [branchEvent([], events.length || 1, [], plan.copies.length, 'child'), ...plan.copies],
        );
        expect(toChatMessages(buildView(child))).toEqual(toChatMessages(target));
        for (const copy of plan.copies) expect(copy.conversation).toBe('child');
        // every copy validates as an event of the child (the branch event itself aside: its from.seq is made up)
        for (const event of child.slice(1))
          expect(isValidEvent({ ...event, id: '00000000-0000-4000-8000-000000000000' }), JSON.stringify(event)).toBe(
            true,
          );
      }),
      { numRuns: 200 },
    );
  });

  it('a rewind with no condensation since its point copies nothing: it only forgets what came after', () => {
    const log = new TestLog();
    log.system();
    log.user('first');
    const [action] = log.batch({ size: 1 });
    log.observe(action!);
    log.agent('done');
    const to = log.events.length;
    log.user('second');
    log.agent('also done');
    const plan = planBranch(buildView(log.events), buildView(log.events.slice(0, to)), context, {
      renameBatches: 'r1',
    });
    expect(plan.copies).toEqual([]);
    expect(plan.forgottenEventIds).toEqual(log.events.slice(to).map((event) => event.id));
  });

  it('a rewind into a tool loop keeps the loop up to its point: the calls it forgets do not cut what came before', () => {
    const log = new TestLog();
    log.system();
    log.user('first');
    const [opening] = log.batch({ size: 1, thinking: true });
    log.observe(opening!);
    const to = log.events.length;
    const [next] = log.batch({ size: 1 });
    log.observe(next!);
    log.agent('done');
    const target = buildView(log.events.slice(0, to));
    const plan = planBranch(buildView(log.events), target, context, { renameBatches: 'r1' });
    expect(plan.copies).toEqual([]);
    const after = appended(log.events, [branchEvent(log.events, to, plan.forgottenEventIds, 0)]);
    expect(toChatMessages(buildView(after)).map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
    ]);
    expect(toChatMessages(buildView(after))).toEqual(toChatMessages(target));
  });

  it('a rewind past a condensation copies what it forgot, the copied calls in batches of their own', () => {
    const log = new TestLog();
    log.system();
    log.user('first');
    const [action] = log.batch({ size: 1 });
    log.observe(action!);
    log.agent('done');
    const to = log.events.length;
    log.condense(
      log.events.slice(1, to).map((event) => event.id),
      'what happened so far',
      1,
    );
    log.user('second');
    const target = buildView(log.events.slice(0, to));
    for (const renameBatches of ['r1', undefined]) {
      const plan = planBranch(
        buildView(log.events),
        target,
        context,
        renameBatches === undefined ? {} : { renameBatches },
      );
      expect(plan.copies.map((copy) => copy.type)).toEqual(['message', 'action', 'observation', 'message']);
      const after = appended(log.events, [
        branchEvent(log.events, to, plan.forgottenEventIds, plan.copies.length),
        ...plan.copies,
      ]);
      // sharing the forgotten original's response_id, the copied call would be held out of the view
      expect(toChatMessages(buildView(after)).length === toChatMessages(target).length).toBe(
        renameBatches !== undefined,
      );
    }
  });

  it('a fork with another spec leaves the system prompt to the child', () => {
    const log = new TestLog();
    log.system();
    log.user('first');
    const plan = planBranch(undefined, buildView(log.events), context, { systemPrompt: false });
    expect(plan.copies.map((copy) => copy.type)).toEqual(['message']);
  });
});
