import fc from 'fast-check';
import type { ActionEvent, Event } from '@flotilla/events';
import { manipulationIndices } from '../manipulation-indices.js';
import type { View } from '../types.js';
import { buildView } from '../view-builder.js';
import { TestLog } from './test-log.js';

type Outcome = 'ok' | 'error' | 'reject' | 'duplicate' | 'failed';

export type Step =
  | { readonly kind: 'user' }
  | { readonly kind: 'agent' }
  | { readonly kind: 'free-error' }
  | { readonly kind: 'noise' }
  | { readonly kind: 'request' }
  | {
      readonly kind: 'batch';
      readonly outcomes: readonly Outcome[];
      readonly order: readonly number[];
      readonly thinking: boolean;
      readonly invalidFirst: boolean;
      /** A user message typed while the tools ran, after this many results (none when beyond). */
      readonly userAfter: number;
    }
  | {
      readonly kind: 'condense';
      readonly good: boolean;
      readonly from: number;
      readonly to: number;
      readonly summary: boolean;
      readonly offset: number;
    };

const fraction = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

const batchStep = fc.record({
  kind: fc.constant('batch' as const),
  outcomes: fc.array(fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'error', 'reject', 'duplicate', 'failed'), {
    minLength: 1,
    maxLength: 4,
  }),
  order: fc.array(fc.nat(), { minLength: 4, maxLength: 4 }),
  thinking: fc.boolean(),
  invalidFirst: fc.boolean(),
  userAfter: fc.nat({ max: 6 }),
});

const condenseStep = fc.record({
  kind: fc.constant('condense' as const),
  good: fc.boolean(),
  from: fraction,
  to: fraction,
  summary: fc.boolean(),
  offset: fc.nat({ max: 40 }),
});

export const stepArbitrary: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constantFrom({ kind: 'user' as const }, { kind: 'agent' as const }), weight: 3 },
  {
    arbitrary: fc.constantFrom(
      { kind: 'free-error' as const },
      { kind: 'noise' as const },
      { kind: 'request' as const },
    ),
    weight: 1,
  },
  { arbitrary: batchStep, weight: 6 },
  { arbitrary: condenseStep, weight: 2 },
);

export type Scenario = { readonly steps: readonly Step[]; readonly trailing: readonly number[] };

/** A conversation script plus, optionally, a last batch whose calls (listed by index) stay unanswered. */
export const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.record({
  steps: fc.array(stepArbitrary, { maxLength: 40 }),
  trailing: fc.oneof(fc.constant([]), fc.uniqueArray(fc.nat({ max: 3 }), { minLength: 1, maxLength: 3 })),
});

function answer(log: TestLog, action: ActionEvent, outcome: Outcome): void {
  if (outcome === 'error' || action.input === null) log.error(action, `bad call ${action.tool_call_id}`);
  else if (outcome === 'reject') log.reject(action, 'too risky');
  else log.observe(action, undefined, outcome === 'failed');
}

function runBatch(log: TestLog, step: Extract<Step, { kind: 'batch' }>): void {
  const actions = log.batch({
    size: step.outcomes.length,
    thinking: step.thinking,
    thought: 'let me look',
    invalid: step.invalidFirst ? [0] : [],
  });
  log.noise(actions.map((action) => action.id));
  const order = actions
    .map((action, index) => ({ action, index, key: step.order[index] ?? 0 }))
    .sort((a, b) => a.key - b.key);
  order.forEach(({ action, index }, answeredSoFar) => {
    if (answeredSoFar === step.userAfter) log.user('while the tools ran');
    answer(log, action, step.outcomes[index] ?? 'ok');
  });
  for (const { action, index } of order) if (step.outcomes[index] === 'duplicate') log.observe(action, 'again');
}

type Cut = { readonly from: number; readonly to: number; readonly summaryId?: string };

/** A condensation either built the right way (from manipulation indices) or arbitrary. */
function runCondense(log: TestLog, step: Extract<Step, { kind: 'condense' }>, view: View): Cut | undefined {
  const summary = step.summary ? `summary ${log.events.length}` : undefined;
  if (!step.good) {
    const events = log.events;
    const [a, b] = [Math.floor(step.from * events.length), Math.floor(step.to * events.length)].sort((x, y) => x - y);
    const ids = events
      .slice(a, b)
      .filter((_, index) => index % 2 === 0 || step.offset % 2 === 0)
      .map((e) => e.id);
    log.condense(ids, summary, step.offset);
    return undefined;
  }
  const indices = manipulationIndices(view);
  const pick = (at: number): number => indices[Math.floor(at * indices.length)] ?? 0;
  const [from, to] = [pick(step.from), pick(step.to)].sort((x, y) => x - y) as [number, number];
  const condensation = log.condense(
    view.items.slice(from, to).map((item) => item.id),
    summary,
    from,
  );
  return summary === undefined ? { from, to } : { from, to, summaryId: condensation.id };
}

export type Played = {
  readonly events: Event[];
  /** After each well-formed condensation: the view before it, the cut range and the view after. */
  readonly cuts: (Cut & { readonly before: View; readonly after: View })[];
};

/** Turns a scenario into a log (and records every well-formed cut for the cut properties). */
export function play(scenario: Scenario): Played {
  const log = new TestLog();
  log.system('static', 'dynamic');
  const cuts: Played['cuts'] = [];
  for (const step of scenario.steps) {
    if (step.kind === 'user') log.user('please go on');
    else if (step.kind === 'agent') log.agent('done for now');
    else if (step.kind === 'free-error') log.error(undefined, 'the model said nothing');
    else if (step.kind === 'noise') log.noise();
    else if (step.kind === 'request') log.requestCondensation();
    else if (step.kind === 'batch') runBatch(log, step);
    else {
      const before = buildView(log.events);
      const cut = runCondense(log, step, before);
      if (cut !== undefined) cuts.push({ ...cut, before, after: buildView(log.events) });
    }
  }
  if (scenario.trailing.length > 0) {
    const actions = log.batch({ size: Math.max(...scenario.trailing) + 1, thinking: true });
    actions.forEach((action, index) => {
      if (!scenario.trailing.includes(index)) log.observe(action);
    });
  }
  return { events: log.events, cuts };
}
