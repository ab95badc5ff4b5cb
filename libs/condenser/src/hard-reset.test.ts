import { describe, expect, it } from 'vitest';
import { LlmError, ScriptedLanguageModel } from '@flotilla/llm';
import { buildView } from '@flotilla/view';
import { condense, type CondenseOptions } from './condense.js';
import { parseCondenserConfig, type CondenserConfigInput } from './condenser-config.js';
import { applyCondensation, ids } from './test-support/apply.js';
import { overflowingSummarizer, summarizer, userPromptOf } from './test-support/summarizer.js';
import { TEST_CONTEXT, TestLog } from './test-support/test-log.js';
import { weighView } from './token-count.js';

function options(
  config: CondenserConfigInput = {},
  llm: ScriptedLanguageModel = summarizer(),
): CondenseOptions & { llm: ScriptedLanguageModel } {
  return { config: parseCondenserConfig({ maxEvents: 40, ...config }), llm, context: TEST_CONTEXT };
}

/** A task, then one thinking tool loop that never yields to a message: no safe cut inside it. */
function oneHugeLoop(batches = 30, output = 'output'): TestLog {
  const log = new TestLog();
  log.system();
  log.user('Migrate the whole repository to ESM.');
  for (let index = 0; index < batches; index += 1)
    log.batch({ size: 1 + (index % 2), thinking: index === 0, output: `${output} ${index}` });
  return log;
}

describe('hard reset', () => {
  it('does nothing under the soft trigger when one tool loop spans the view', async () => {
    const log = oneHugeLoop();
    expect(buildView(log.events).items.length).toBeGreaterThan(40);
    const run = options();
    expect(await condense(log.events, run)).toBeNull();
    expect(run.llm.requests).toHaveLength(0);
  });

  it('under a request, forgets the whole loop and keeps the task that still fits', async () => {
    const log = oneHugeLoop();
    log.requestCondensation();
    const result = await condense(log.events, options());
    expect(result!.outcome).toMatchObject({ kind: 'hard_reset', reasons: ['request', 'events'], summaryOffset: 2 });
    const { before, after, condensation } = applyCondensation(log, result!);
    expect(condensation.forgotten_event_ids).toEqual(ids(before.items.slice(2)));
    expect(after.items.map((item) => item.type)).toEqual(['system_prompt', 'message', 'condensation_summary']);
  });

  it('forgets the head too when it alone does not leave room under the token limit', async () => {
    const log = new TestLog();
    log.system();
    log.user(`Here is the spec: ${'s'.repeat(8_000)}`);
    for (let index = 0; index < 10; index += 1) log.batch({ thinking: index === 0, output: 'o'.repeat(200) });
    const total = weighView(buildView(log.events)).total;
    const result = await condense(log.events, options({ maxTokens: total - 100, summaryMaxOutputTokens: 1_000 }));
    expect(result!.outcome).toMatchObject({ kind: 'hard_reset', reasons: ['tokens'], summaryOffset: 1 });
    const { after } = applyCondensation(log, result!);
    expect(after.items.map((item) => item.type)).toEqual(['system_prompt', 'condensation_summary']);
    expect(weighView(after).total).toBeLessThan(total / 4);
  });

  it('resets when even the best safe range leaves the view over the token limit', async () => {
    const log = new TestLog();
    log.system();
    log.user(`Here is the spec: ${'s'.repeat(8_000)}`);
    log.agent('ok');
    log.user('go');
    for (let index = 0; index < 6; index += 1) log.batch({ output: 'o'.repeat(200) });
    const total = weighView(buildView(log.events)).total;
    const result = await condense(log.events, options({ maxTokens: total - 100, summaryMaxOutputTokens: 1_000 }));
    expect(result!.outcome).toMatchObject({ kind: 'hard_reset', summaryOffset: 1 });
    const { after } = applyCondensation(log, result!);
    expect(weighView(after).total).toBeLessThan(total / 4);
  });

  it('keeps the head and forgets a middle range when that is enough', async () => {
    const log = new TestLog();
    log.system();
    log.user('short task');
    log.agent('ok');
    log.user('more');
    for (let index = 0; index < 6; index += 1) log.batch({ thinking: index === 0, output: 'o'.repeat(4_000) });
    const total = weighView(buildView(log.events)).total;
    const result = await condense(
      log.events,
      options({ maxTokens: Math.floor(total / 3), summaryMaxOutputTokens: 100 }),
    );
    expect(result!.outcome).toMatchObject({ kind: 'summarized', summaryOffset: 3 });
    const { after } = applyCondensation(log, result!);
    expect(weighView(after).total).toBeLessThan(total / 6);
  });

  it('shrinks every event by 20% per retry while the summary call overflows', async () => {
    const log = oneHugeLoop(12, 'x'.repeat(2_000));
    log.requestCondensation();
    const llm = overflowingSummarizer(12_000);
    const result = await condense(log.events, options({}, llm));
    expect(result!.outcome.kind).toBe('hard_reset');
    const lengths = llm.requests.map((request) => userPromptOf(request).length);
    expect(lengths.length).toBeGreaterThan(2);
    expect(result!.outcome.attempts).toBe(lengths.length);
    expect(result!.outcome.scale).toBeCloseTo(0.8 ** (lengths.length - 1));
    for (let index = 1; index < lengths.length; index += 1) {
      expect(lengths[index]!).toBeLessThan(lengths[index - 1]! * 0.85);
    }
    expect(lengths.at(-1)!).toBeLessThanOrEqual(12_000);
    expect(userPromptOf(llm.requests.at(-1))).toContain('characters omitted');
    applyCondensation(log, result!);
  });

  it('skips attempts that cannot fit the summarizer’s known input limit without calling it', async () => {
    const log = oneHugeLoop(12, 'x'.repeat(2_000));
    log.requestCondensation();
    const llm = summarizer({ maxInputTokens: 3_000 });
    const result = await condense(log.events, options({}, llm));
    expect(llm.requests).toHaveLength(1);
    expect(result!.outcome.attempts).toBe(1);
    expect(result!.outcome.scale).toBeLessThan(1);
  });

  it('gives up with summary_overflow after maxSummaryAttempts overflowing calls', async () => {
    const log = oneHugeLoop(12, 'x'.repeat(2_000));
    log.requestCondensation();
    const llm = new ScriptedLanguageModel({ replies: () => new LlmError('context_window_exceeded', 'too long') });
    await expect(condense(log.events, options({ maxSummaryAttempts: 3 }, llm))).rejects.toMatchObject({
      name: 'CondenserError',
      code: 'summary_overflow',
      isRetryable: false,
    });
    expect(llm.requests).toHaveLength(3);
  });

  it('fails loudly when a hard trigger holds but only the system prompt is left', async () => {
    const log = new TestLog();
    log.system();
    log.requestCondensation();
    await expect(condense(log.events, options())).rejects.toMatchObject({ code: 'nothing_to_forget' });
  });
});
