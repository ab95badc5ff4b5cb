import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEvent } from '@flotilla/events';
import type { ChatMessage } from '@flotilla/llm';
import { ChatRenderer, toChatMessages } from './chat-messages.js';
import { manipulationIndices, viewBlocks } from './manipulation-indices.js';
import { play, scenarioArbitrary } from './testing/arbitrary-log.js';
import { TestLog } from './testing/test-log.js';
import { viewProblems } from './testing/view-oracle.js';
import { buildView, unmatchedActions, ViewBuilder } from './view-builder.js';

const runs = { numRuns: 300 };

/** The rules every provider enforces on a message list. */
function chatProblems(messages: readonly ChatMessage[]): string[] {
  const problems: string[] = [];
  if (messages.some((message, index) => message.role === 'system' && index !== 0))
    problems.push('system message not first');
  let owed: string[] = [];
  for (const message of messages) {
    if (message.role === 'tool') {
      if (owed[0] !== message.toolCallId) problems.push(`tool result ${message.toolCallId} answers no pending call`);
      owed = owed.slice(1);
      continue;
    }
    if (owed.length > 0) problems.push(`calls ${owed.join()} unanswered before a ${message.role} message`);
    owed = message.role === 'assistant' ? message.toolCalls.map((call) => call.id) : [];
    if (message.role === 'user' && message.content.length === 0) problems.push('empty user message');
  }
  if (owed.length > 0) problems.push(`calls ${owed.join()} unanswered at the end`);
  messages.forEach((message, index) => {
    if (message.role === 'user' && messages[index - 1]?.role === 'user') problems.push('two user messages in a row');
  });
  return problems;
}

describe('view properties over generated conversations', () => {
  it('generates logs the event schemas accept', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        for (const event of play(scenario).events) expect(() => parseEvent(event)).not.toThrow();
      }),
      { numRuns: 50 },
    );
  });

  it('every view keeps every invariant', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const { events } = play(scenario);
        expect(viewProblems(events, buildView(events))).toEqual([]);
      }),
      runs,
    );
  });

  it('every prefix of every log gives a sound view', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const { events } = play(scenario);
        for (let end = 0; end <= events.length; end += 1) {
          const prefix = events.slice(0, end);
          expect(viewProblems(prefix, buildView(prefix))).toEqual([]);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('chat messages never carry an orphan result or an unanswered call', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const messages = toChatMessages(buildView(play(scenario).events));
        expect(chatProblems(messages)).toEqual([]);
        expect(messages[0]?.role).toBe('system');
      }),
      runs,
    );
  });

  it('a condensation cut at manipulation indices forgets exactly its range and puts the summary at its offset', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        for (const cut of play(scenario).cuts) {
          const expected = [...cut.before.items.slice(0, cut.from), ...cut.before.items.slice(cut.to)].map(
            (item) => item.id,
          );
          const after = cut.after.items.map((item) => item.id);
          if (cut.summaryId !== undefined) expected.splice(cut.from, 0, cut.summaryId);
          expect(after).toEqual(expected);
        }
      }),
      runs,
    );
  });

  it('cutting between any two manipulation indices keeps every block whole and the messages valid', () => {
    fc.assert(
      fc.property(scenarioArbitrary, fc.nat(), fc.nat(), (scenario, a, b) => {
        const { events } = play(scenario);
        const view = buildView(events);
        const indices = manipulationIndices(view);
        const [from, to] = [indices[a % indices.length] ?? 0, indices[b % indices.length] ?? 0].sort(
          (x, y) => x - y,
        ) as [number, number];
        const cut = [...view.items.slice(0, from), ...view.items.slice(to)];
        expect(chatProblems(toChatMessages(cut))).toEqual([]);
        for (const block of viewBlocks(view)) {
          const inside = block.start >= from && block.end <= to;
          const outside = block.end <= from || block.start >= to;
          expect(inside || outside).toBe(true);
        }
        const log = new TestLog();
        const condensation = log.condense(view.items.slice(from, to).map((item) => item.id));
        const condensed = buildView([...events, { ...condensation, id: 'cut', seq: events.length + 1 }]);
        expect(condensed.items.map((item) => item.id)).toEqual(cut.map((item) => item.id));
      }),
      runs,
    );
  });

  it('an incremental ViewBuilder equals buildView at every chunk boundary', () => {
    fc.assert(
      fc.property(
        scenarioArbitrary,
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 30 }),
        (scenario, sizes) => {
          const { events } = play(scenario);
          const builder = new ViewBuilder();
          let end = 0;
          for (let chunk = 0; end < events.length; chunk += 1) {
            const next = Math.min(events.length, end + (sizes[chunk % sizes.length] ?? 1));
            builder.append(events.slice(end, next));
            end = next;
            expect(builder.view()).toEqual(buildView(events.slice(0, end)));
            expect(builder.unmatchedActions()).toEqual(unmatchedActions(events.slice(0, end)));
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a ChatRenderer following a ViewBuilder renders each view as toChatMessages does, and keeps its measure', () => {
    const measure = (message: ChatMessage): number => JSON.stringify(message).length;
    fc.assert(
      fc.property(
        scenarioArbitrary,
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 30 }),
        (scenario, sizes) => {
          const { events } = play(scenario);
          const builder = new ViewBuilder();
          const renderer = new ChatRenderer(measure);
          let end = 0;
          for (let chunk = 0; end < events.length; chunk += 1) {
            const next = Math.min(events.length, end + (sizes[chunk % sizes.length] ?? 1));
            builder.append(events.slice(end, next));
            end = next;
            const rendered = renderer.render(builder.view().items);
            const fresh = toChatMessages(buildView(events.slice(0, end)));
            expect(rendered.messages).toEqual(fresh);
            expect(rendered.measured).toBe(fresh.reduce((sum, message) => sum + measure(message), 0));
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('unmatched actions are exactly the understood calls nobody has answered', () => {
    fc.assert(
      fc.property(scenarioArbitrary, (scenario) => {
        const { events } = play(scenario);
        const answered = new Set(
          events.flatMap((event) => ('action_id' in event && event.type !== 'hook_execution' ? [event.action_id] : [])),
        );
        const expected = events
          .filter((event) => event.type === 'action' && event.input !== null && !answered.has(event.id))
          .map((event) => event.id);
        expect(unmatchedActions(events).map((action) => action.id)).toEqual(expected);
      }),
      runs,
    );
  });
});
