import { describe, expect, it } from 'vitest';
import { LlmError, ScriptedLanguageModel } from '@flotilla/llm';
import { buildView } from '@flotilla/view';
import { condense, type CondenseOptions } from './condense.js';
import { parseCondenserConfig, type CondenserConfigInput } from './condenser-config.js';
import { STRICT_SUMMARY_INSTRUCTION, SUMMARY_PREAMBLE, SUMMARY_SYSTEM_PROMPT } from './summary-prompt.js';
import { applyCondensation, ids } from './test-support/apply.js';
import { realisticLog } from './test-support/realistic-log.js';
import { SUMMARY_TEXT, summarizer, userPromptOf } from './test-support/summarizer.js';
import { TEST_CONTEXT, TestLog } from './test-support/test-log.js';
import { weighView } from './token-count.js';

function options(
  config: CondenserConfigInput = {},
  llm = summarizer(),
): CondenseOptions & { llm: ScriptedLanguageModel } {
  return { config: parseCondenserConfig({ maxEvents: 40, ...config }), llm, context: TEST_CONTEXT };
}

describe('condense', () => {
  it('does nothing when no trigger holds', async () => {
    const log = realisticLog(2);
    const run = options();
    expect(await condense(log.events, run)).toBeNull();
    expect(run.llm.requests).toHaveLength(0);
  });

  it('halves a view over maxEvents, keeping the system prompt and the first items', async () => {
    const log = realisticLog(8);
    const run = options({ maxEvents: 40, keepFirst: 2 });
    const result = await condense(log.events, run);
    expect(result).not.toBeNull();
    const { before, after, condensation } = applyCondensation(log, result!);
    expect(before.items.length).toBeGreaterThan(40);
    expect(after.items.length).toBeLessThanOrEqual(20);
    expect(result!.outcome).toMatchObject({
      kind: 'summarized',
      reasons: ['events'],
      itemsBefore: before.items.length,
      itemsAfter: after.items.length,
    });

    const offset = condensation.summary_offset!;
    expect(offset).toBeGreaterThanOrEqual(3);
    expect(ids(after.items.slice(0, offset))).toEqual(ids(before.items.slice(0, offset)));
    expect(after.items[offset]).toEqual({
      type: 'condensation_summary',
      id: condensation.id,
      summary: condensation.summary,
    });
    expect(condensation.summary).toBe(`${SUMMARY_PREAMBLE}\n\n${SUMMARY_TEXT}`);
    const end = offset + condensation.forgotten_event_ids.length;
    expect(condensation.forgotten_event_ids).toEqual(ids(before.items.slice(offset, end)));
    expect(ids(after.items.slice(offset + 1))).toEqual(ids(before.items.slice(end)));
  });

  it('returns the condensation and an llm_usage event for the summary call', async () => {
    const log = realisticLog(8);
    const result = await condense(log.events, options());
    const [condensation, usage] = result!.drafts;
    expect(condensation).toMatchObject({
      type: 'condensation',
      tenant: 'acme',
      conversation: 'c1',
      source: 'agent',
      response_id: 'scripted-1',
    });
    expect(usage).toMatchObject({
      type: 'llm_usage',
      source: 'system',
      purpose: 'condensation',
      model: 'summary-model',
      response_id: 'scripted-1',
      prompt_tokens: 900,
      completion_tokens: 120,
      cost_usd: 0.002,
    });
  });

  it('keeps a larger head when keepFirst asks for it, snapped so no batch is split', async () => {
    for (const keepFirst of [0, 1, 2, 3, 4, 5]) {
      const log = realisticLog(8);
      const result = await condense(log.events, options({ keepFirst }));
      const { before, after, condensation } = applyCondensation(log, result!);
      const offset = condensation.summary_offset!;
      expect(offset).toBeGreaterThanOrEqual(1 + keepFirst);
      expect(ids(after.items.slice(0, offset))).toEqual(ids(before.items.slice(0, offset)));
      const beforeOffset = before.items[offset - 1];
      expect(beforeOffset?.type === 'action').toBe(false);
    }
  });

  it('shows the summarizer the forgotten events and nothing it keeps', async () => {
    const log = realisticLog(8);
    const run = options();
    const result = await condense(log.events, run);
    const { before, condensation } = applyCondensation(log, result!);
    expect(run.llm.requests).toHaveLength(1);
    const request = run.llm.requests[0]!;
    expect(request.messages[0]).toEqual({ role: 'system', content: [{ text: SUMMARY_SYSTEM_PROMPT, cache: true }] });
    expect(request.maxOutputTokens).toBe(2_048);
    const prompt = userPromptOf(request);
    expect(prompt).toContain('<PREVIOUS_SUMMARY>\nnone\n</PREVIOUS_SUMMARY>');
    expect(prompt).toContain('Report of turn 0.');
    expect(prompt).toContain('Follow-up 1: go on.');
    expect(prompt).not.toContain('Report of turn 7.');
    expect(prompt).not.toContain('The build of service A fails');
    const forgotten = new Set(condensation.forgotten_event_ids);
    const keptTexts = before.items
      .filter((item) => !forgotten.has(item.id) && item.type === 'message')
      .map((item) => (item.type === 'message' && item.content[0]?.type === 'text' ? item.content[0].text : ''));
    for (const text of keptTexts) expect(prompt).not.toContain(text);
  });

  it('rolls summaries: the next condensation forgets the previous summary and shows its text', async () => {
    const log = realisticLog(8);
    const first = applyCondensation(log, (await condense(log.events, options()))!);
    realisticLog(6, log);
    const run = options({}, summarizer({}, 'USER_CONTEXT: second summary'));
    const result = await condense(log.events, run);
    const second = applyCondensation(log, result!);
    expect(second.condensation.forgotten_event_ids[0]).toBe(first.condensation.id);
    expect(second.condensation.summary_offset).toBe(first.condensation.summary_offset);
    expect(userPromptOf(run.llm.requests[0])).toContain(`<PREVIOUS_SUMMARY>\n${SUMMARY_TEXT}\n</PREVIOUS_SUMMARY>`);
    const summaries = second.after.items.filter((item) => item.type === 'condensation_summary');
    expect(summaries).toEqual([
      {
        type: 'condensation_summary',
        id: second.condensation.id,
        summary: `${SUMMARY_PREAMBLE}\n\nUSER_CONTEXT: second summary`,
      },
    ]);
  });

  it('rolls a summary that sits inside the would-be head: the range starts at the summary', async () => {
    const log = realisticLog(8);
    const first = applyCondensation(log, (await condense(log.events, options({ keepFirst: 0 })))!);
    expect(first.condensation.summary_offset).toBe(1);
    realisticLog(6, log);
    const second = applyCondensation(log, (await condense(log.events, options({ keepFirst: 3 })))!);
    expect(second.condensation.summary_offset).toBe(1);
    expect(second.condensation.forgotten_event_ids[0]).toBe(first.condensation.id);
    expect(second.after.items.filter((item) => item.type === 'condensation_summary')).toHaveLength(1);
  });

  it('answers a condensation request even when the view is small, and the request is then handled', async () => {
    const log = realisticLog(2);
    log.requestCondensation();
    const result = await condense(log.events, options());
    expect(result!.outcome.reasons).toEqual(['request']);
    const { before, after } = applyCondensation(log, result!);
    expect(after.unhandledCondensationRequest).toBe(false);
    expect(after.items.length).toBeLessThanOrEqual(Math.ceil(before.items.length / 2));
  });

  it('halves the tokens under the hard token trigger', async () => {
    const log = realisticLog(10);
    const total = weighView(buildView(log.events)).total;
    const maxTokens = Math.floor(total * 0.9);
    const result = await condense(log.events, options({ maxEvents: 1_000, maxTokens, summaryMaxOutputTokens: 200 }));
    expect(result!.outcome.reasons).toEqual(['tokens']);
    const { after } = applyCondensation(log, result!);
    expect(weighView(after).total).toBeLessThanOrEqual(maxTokens / 2);
    expect(result!.outcome.tokensAfter).toBe(weighView(after).total);
  });

  it('takes the model input limit as a token limit when it is stricter', async () => {
    const log = realisticLog(10);
    const total = weighView(buildView(log.events)).total;
    const result = await condense(log.events, {
      ...options({ maxEvents: 1_000, summaryMaxOutputTokens: 200 }),
      maxInputTokens: total - 10,
    });
    expect(result!.outcome.reasons).toEqual(['tokens']);
  });

  it('forgets at least minimumProgress of the view', async () => {
    const log = new TestLog();
    log.system();
    for (let index = 0; index < 30; index += 1) log.user(`message ${index}`);
    log.requestCondensation();
    const modest = await condense(log.events, options({ minimumProgress: 0.1 }));
    const strict = await condense(log.events, options({ minimumProgress: 0.9 }));
    expect(modest!.outcome.forgottenItems).toBeGreaterThanOrEqual(3);
    expect(modest!.outcome.forgottenItems).toBeLessThan(27);
    expect(strict!.outcome.forgottenItems).toBeGreaterThanOrEqual(27);
  });

  it('leaves a pending batch alone; its results still pair with it afterwards', async () => {
    const log = realisticLog(8);
    const pending = log.calls({ size: 2, thinking: true });
    log.requestCondensation();
    const result = await condense(log.events, options());
    const forgotten = new Set((result!.drafts[0] as { forgotten_event_ids: string[] }).forgotten_event_ids);
    for (const action of pending) expect(forgotten.has(action.id)).toBe(false);
    log.append(result!.drafts);
    for (const action of pending) log.observe(action, 'late result');
    const view = buildView(log.events);
    expect(ids(view.items.slice(-4))).toEqual([
      ...pending.map((action) => action.id),
      ...ids(log.events.slice(-2) as never),
    ]);
  });

  it('passes LLM failures other than overflow through, after one call', async () => {
    const log = realisticLog(8);
    const llm = new ScriptedLanguageModel({ replies: [new LlmError('rate_limit', 'slow down')] });
    await expect(condense(log.events, options({}, llm))).rejects.toMatchObject({
      name: 'LlmError',
      code: 'rate_limit',
    });
    expect(llm.requests).toHaveLength(1);
  });

  it('reports an empty summary as a retryable CondenserError', async () => {
    const log = realisticLog(8);
    await expect(condense(log.events, options({}, summarizer({}, '   ')))).rejects.toMatchObject({
      code: 'empty_summary',
      isRetryable: true,
    });
  });

  it('stops when its signal is aborted', async () => {
    const log = realisticLog(8);
    const controller = new AbortController();
    controller.abort();
    await expect(condense(log.events, { ...options(), signal: controller.signal })).rejects.toThrow();
  });

  describe('the fallback ladder, rung by rung', () => {
    it('1: asks again with a stricter prompt', async () => {
      const log = realisticLog(8);
      const run = options();
      await condense(log.events, { ...run, attempt: 1 });
      expect(userPromptOf(run.llm.requests[0]!)).toContain(STRICT_SUMMARY_INSTRUCTION);
      const plain = options();
      await condense(log.events, plain);
      expect(userPromptOf(plain.llm.requests[0]!)).not.toContain(STRICT_SUMMARY_INSTRUCTION);
    });

    it('2: summarises about half the range, ending at a safe cut', async () => {
      const log = realisticLog(8);
      const full = await condense(log.events, options());
      const half = await condense(log.events, { ...options(), attempt: 2 });
      const forgotten = (result: typeof full): number =>
        (result!.drafts[0] as { forgotten_event_ids: string[] }).forgotten_event_ids.length;
      expect(forgotten(half)).toBeLessThan(forgotten(full));
      expect(forgotten(half)).toBeGreaterThan(0);
      // the cut is a safe one: no tool call is kept without its result, or forgotten without it
      const forgottenIds = new Set((half!.drafts[0] as { forgotten_event_ids: string[] }).forgotten_event_ids);
      const before = buildView(log.events).items;
      const callOf = (item: (typeof before)[number]): string | undefined =>
        item.type === 'action' || item.type === 'observation' || item.type === 'agent_error'
          ? item.tool_call_id
          : undefined;
      for (const item of before.filter((candidate) => forgottenIds.has(candidate.id))) {
        const call = callOf(item);
        if (call === undefined) continue;
        const partners = before.filter((other) => callOf(other) === call);
        expect(
          partners.every((partner) => forgottenIds.has(partner.id)),
          call,
        ).toBe(true);
      }
    });

    it('3: forgets the range with a placeholder naming what was forgotten, without calling the model', async () => {
      const log = realisticLog(8);
      const run = options();
      const result = await condense(log.events, { ...run, attempt: 3 });
      expect(run.llm.requests).toHaveLength(0);
      expect(result!.outcome.kind).toBe('placeholder');
      expect(result!.drafts).toHaveLength(1);
      const summary = (result!.drafts[0] as { summary: string }).summary;
      expect(summary).toMatch(
        /^Summary of the earlier part.*\n\n\(No summary: the summarizer failed on every attempt\. \d+ earlier items were removed/s,
      );
      expect(summary).toContain('The last tool calls among them:');
    });
  });
});
