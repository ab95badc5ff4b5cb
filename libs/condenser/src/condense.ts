import { llmUsageDraft } from './usage-draft.js';
import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';
import { isLlmError, type GenerateResult, type LanguageModel } from '@flotilla/llm';
import { buildView, toChatMessages, type ViewItem } from '@flotilla/view';
import { effectiveTokenLimit, isHardReason, reasonsFor, type CondensationReason } from './condensation-reasons.js';
import type { CondenserConfig } from './condenser-config.js';
import { CondenserError } from './errors.js';
import { planForgottenRange } from './forgotten-range.js';
import { SUMMARY_PREAMBLE, summaryRequest } from './summary-prompt.js';
import { approximateTokens, weighView, type TokenCounter } from './token-count.js';

export type CondenseOptions = {
  readonly config: CondenserConfig;
  /** The model that writes the summary. */
  readonly llm: LanguageModel;
  /** Envelope of the drafts (tenant, conversation, source, clock). */
  readonly context: DraftContext;
  readonly signal?: AbortSignal;
  /** The agent model's input limit; defaults to `llm.info.maxInputTokens` (summary by the agent's own model). */
  readonly maxInputTokens?: number;
  /** Defaults to `approximateTokens`; pass the step's counter so both agree on the budget. */
  readonly countTokens?: TokenCounter;
};

export const CondensationKind = {
  /** A middle range was forgotten between manipulation indices and summarised. */
  summarized: 'summarized',
  /** No safe range made room under a hard trigger: everything after the system prompt (or kept head) was summarised. */
  hardReset: 'hard_reset',
} as const;
export type CondensationKind = (typeof CondensationKind)[keyof typeof CondensationKind];

/** What a condensation did, for logs and metrics. */
export type CondensationOutcome = {
  readonly kind: CondensationKind;
  readonly reasons: readonly CondensationReason[];
  /** View items forgotten (a previous summary among them counts as one). */
  readonly forgottenItems: number;
  /** Where the summary stands in the condensed view: right after the kept head. */
  readonly summaryOffset: number;
  readonly itemsBefore: number;
  readonly itemsAfter: number;
  /** Estimated with the token counter in use; the summary is counted at its real length. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** Summary calls made (more than one after the summarizer's context overflowed). */
  readonly attempts: number;
  /** Share of each event's text the summarizer saw: 1, 0.8, 0.64, … */
  readonly scale: number;
};

export type CondenseResult = {
  /** A condensation, then an llm_usage (purpose 'condensation'): one commit. */
  readonly drafts: readonly EventDraft[];
  readonly outcome: CondensationOutcome;
};

const SHRINK_FACTOR = 0.8;

/**
 * Condenses a conversation whose view is over budget. Returns null when no trigger holds, or
 * when only the soft trigger holds and no safe range exists. Throws an LlmError when the summary
 * call fails for any reason but a context overflow, and a CondenserError when a hard trigger
 * holds but nothing can be forgotten or the summary overflows after every retry.
 */
export async function condense(events: readonly Event[], options: CondenseOptions): Promise<CondenseResult | null> {
  const { config, llm } = options;
  const countTokens = options.countTokens ?? approximateTokens;
  const view = buildView(events);
  const weights = weighView(view, countTokens);
  const tokenLimit = effectiveTokenLimit(config, options.maxInputTokens ?? llm.info.maxInputTokens);
  const reasons = reasonsFor(view, config, tokenLimit, weights.total);
  if (reasons.length === 0) return null;
  const range = planForgottenRange({
    items: view.items,
    weights,
    reasons,
    config,
    ...(tokenLimit === undefined ? {} : { tokenLimit }),
  });
  if (range === null) {
    if (!reasons.some(isHardReason)) return null;
    throw new CondenserError(
      'nothing_to_forget',
      `The view must be condensed (${reasons.join(', ')}) but holds nothing after the system prompt. ` +
        'The system prompt and tools alone exceed the budget: shorten them or raise the token limit.',
    );
  }
  const forgotten = view.items.slice(range.start, range.end);
  const { result, attempts, scale } = await summarize(forgotten, options, countTokens);
  const text = result.content.map((part) => part.text).join('').trim();
  if (text === '') throw new CondenserError('empty_summary', `The summarizer (${result.model}) returned no text; try again.`);
  const summary = `${SUMMARY_PREAMBLE}\n\n${text}`;

  const system: DraftContext = { ...options.context, source: 'system' };
  const drafts: EventDraft[] = [
    draftEvent(options.context, 'condensation', {
      forgotten_event_ids: forgotten.map((item) => item.id),
      summary,
      summary_offset: range.start,
      response_id: result.responseId,
    }),
    llmUsageDraft(result, system, 'condensation'),
  ];
  const forgottenTokens = (weights.before.get(range.end) ?? 0) - (weights.before.get(range.start) ?? 0);
  const summaryItem: ViewItem = { type: 'condensation_summary', id: 'summary', summary };
  return {
    drafts,
    outcome: {
      kind: range.hardReset ? CondensationKind.hardReset : CondensationKind.summarized,
      reasons,
      forgottenItems: forgotten.length,
      summaryOffset: range.start,
      itemsBefore: view.items.length,
      itemsAfter: view.items.length - forgotten.length + 1,
      tokensBefore: weights.total,
      tokensAfter: weights.total - forgottenTokens + countTokens(toChatMessages([summaryItem])),
      attempts,
      scale,
    },
  };
}

type Summarized = { readonly result: GenerateResult; readonly attempts: number; readonly scale: number };

/**
 * One summary call; when the summarizer's context overflows (or the request is estimated not to
 * fit its known input limit), every event's text is shortened by 20% more and the call retried.
 */
async function summarize(forgotten: readonly ViewItem[], options: CondenseOptions, countTokens: TokenCounter): Promise<Summarized> {
  const { config, llm, signal } = options;
  const inputLimit = llm.info.maxInputTokens;
  let calls = 0;
  let lastOverflow: unknown;
  for (let attempt = 0; attempt < config.maxSummaryAttempts; attempt += 1) {
    signal?.throwIfAborted();
    const scale = SHRINK_FACTOR ** attempt;
    const request = summaryRequest({ forgotten, maxEventChars: config.maxEventChars, scale, maxOutputTokens: config.summaryMaxOutputTokens });
    const lastAttempt = attempt === config.maxSummaryAttempts - 1;
    if (!lastAttempt && inputLimit !== undefined && countTokens(request.messages) > inputLimit) continue;
    calls += 1;
    try {
      const result = await llm.generate(request, signal === undefined ? {} : { signal });
      return { result, attempts: calls, scale };
    } catch (error) {
      if (!isLlmError(error) || error.code !== 'context_window_exceeded') throw error;
      lastOverflow = error;
    }
  }
  throw new CondenserError(
    'summary_overflow',
    `The summary request still overflowed the summarizer's context after ${config.maxSummaryAttempts} attempts ` +
      `(${forgotten.length} events, shortened to ${Math.round(SHRINK_FACTOR ** (config.maxSummaryAttempts - 1) * 100)}%). ` +
      'Use a summarizer with a larger context window, or lower maxEventChars.',
    { cause: lastOverflow },
  );
}
