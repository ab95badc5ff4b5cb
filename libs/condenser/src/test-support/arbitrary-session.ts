import fc from 'fast-check';
import { TestLog } from './test-log.js';

type Outcome = 'ok' | 'error' | 'reject';

export type SessionStep =
  | { readonly kind: 'user' }
  | { readonly kind: 'agent' }
  | { readonly kind: 'noise' }
  | { readonly kind: 'condense' }
  | {
      readonly kind: 'batch';
      readonly outcomes: readonly Outcome[];
      readonly thinking: boolean;
      readonly output: number;
    };

const batchStep = fc.record({
  kind: fc.constant('batch' as const),
  outcomes: fc.array(fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'error', 'reject'), { minLength: 1, maxLength: 4 }),
  thinking: fc.boolean(),
  output: fc.nat({ max: 2_000 }),
});

/** Sessions with parallel batches, thinking tool loops (runs of batches with no message between) and condensations. */
export const sessionArbitrary: fc.Arbitrary<readonly SessionStep[]> = fc.array(
  fc.oneof(
    { arbitrary: fc.constantFrom({ kind: 'user' as const }, { kind: 'agent' as const }), weight: 2 },
    { arbitrary: fc.constant({ kind: 'noise' as const }), weight: 1 },
    { arbitrary: batchStep, weight: 8 },
    { arbitrary: fc.constant({ kind: 'condense' as const }), weight: 1 },
  ),
  { minLength: 1, maxLength: 80 },
);

/**
 * Plays a session into a log. `condenseStep` is called at each condense step with the log so far
 * (it appends whatever condensation it makes).
 */
export async function playSession(
  steps: readonly SessionStep[],
  condenseStep: (log: TestLog) => Promise<void>,
): Promise<TestLog> {
  const log = new TestLog();
  log.system();
  log.user('Make the test suite pass.');
  for (const step of steps) {
    if (step.kind === 'user') log.user('continue, please');
    else if (step.kind === 'agent') log.agent('status report');
    else if (step.kind === 'noise') log.noise();
    else if (step.kind === 'condense') await condenseStep(log);
    else {
      const actions = log.calls({ size: step.outcomes.length, thinking: step.thinking, thought: 'checking' });
      actions.forEach((action, index) => {
        const outcome = step.outcomes[index];
        if (outcome === 'error') log.error(action);
        else if (outcome === 'reject') log.reject(action);
        else log.observe(action, 'r'.repeat(step.output));
      });
    }
  }
  return log;
}
