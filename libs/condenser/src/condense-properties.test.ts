import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildView, firstCuttableIndex, manipulationIndices } from '@flotilla/view';
import { condensationReasons, isHardReason } from './condensation-reasons.js';
import { condense } from './condense.js';
import { parseCondenserConfig, type CondenserConfig } from './condenser-config.js';
import { applyCondensation, ids } from './test-support/apply.js';
import { playSession, sessionArbitrary } from './test-support/arbitrary-session.js';
import { summarizer } from './test-support/summarizer.js';
import { TEST_CONTEXT, type TestLog } from './test-support/test-log.js';
import { weighView } from './token-count.js';

const configArbitrary = fc
  .record({
    maxEvents: fc.integer({ min: 8, max: 60 }),
    keepFirst: fc.integer({ min: 0, max: 4 }),
    maxTokens: fc.option(fc.integer({ min: 50, max: 6_000 }), { nil: undefined }),
    minimumProgress: fc.double({ min: 0.05, max: 0.6, noNaN: true }),
    summaryMaxOutputTokens: fc.integer({ min: 20, max: 400 }),
  })
  .map(({ maxTokens, ...rest }) =>
    parseCondenserConfig({
      ...rest,
      keepFirst: Math.min(rest.keepFirst, Math.floor(rest.maxEvents / 2) - 2),
      ...(maxTokens === undefined ? {} : { maxTokens }),
    }),
  );

async function condenseInto(log: TestLog, config: CondenserConfig): Promise<void> {
  log.requestCondensation();
  const result = await condense(log.events, { config, llm: summarizer(), context: TEST_CONTEXT });
  if (result !== null) applyCondensation(log, result);
}

describe('condense over generated sessions', () => {
  it('never splits a call from its result, keeps head and tail verbatim, rolls summaries and makes progress under hard triggers', async () => {
    await fc.assert(
      fc.asyncProperty(sessionArbitrary, configArbitrary, fc.boolean(), async (steps, config, request) => {
        const log = await playSession(steps, (partial) => condenseInto(partial, config));
        if (request) log.requestCondensation();
        const before = buildView(log.events);
        const reasons = condensationReasons(before, config);
        const result = await condense(log.events, { config, llm: summarizer(), context: TEST_CONTEXT });
        if (result === null) {
          expect(reasons.some(isHardReason)).toBe(false);
          return;
        }
        expect(reasons.length).toBeGreaterThan(0);
        // applyCondensation validates the drafts and the chat messages of the condensed view.
        const { after, condensation } = applyCondensation(log, result);
        const offset = condensation.summary_offset!;
        const end = offset + condensation.forgotten_event_ids.length;
        const indices = manipulationIndices(before);
        expect(indices).toContain(offset);
        expect(indices).toContain(end);
        expect(condensation.forgotten_event_ids).toEqual(ids(before.items.slice(offset, end)));
        expect(ids(after.items)).toEqual([
          ...ids(before.items.slice(0, offset)),
          condensation.id,
          ...ids(before.items.slice(end)),
        ]);
        expect(after.items.filter((item) => item.type === 'condensation_summary')).toHaveLength(1);
        expect(after.unhandledCondensationRequest).toBe(false);

        const first = firstCuttableIndex(before);
        const weights = weighView(before);
        const forgottenTokens = weights.before.get(end)! - weights.before.get(offset)!;
        const itemProgress = end - offset >= Math.ceil(config.minimumProgress * (before.items.length - first) - 1e-9);
        const tokenProgress = forgottenTokens >= config.minimumProgress * (weights.total - weights.system);
        expect(itemProgress || tokenProgress).toBe(true);
        if (result.outcome.kind === 'hard_reset') expect(end).toBe(before.items.length);
        if (reasons.includes('tokens') && config.maxTokens !== undefined) {
          // Under the hard token trigger the condensed view fits the limit unless the summary itself is too big.
          const summaryTokens = weighView(after).total - (weights.total - forgottenTokens);
          expect(weighView(after).total - summaryTokens).toBeLessThanOrEqual(config.maxTokens);
        }
      }),
      { numRuns: 200 },
    );
  });
});
