import { llmUsageDraft } from './usage-draft.js';
import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';
import { isLlmError, type GenerateResult, type LanguageModel } from '@flotilla/llm';
import { buildView, manipulationIndices, toChatMessages, type ViewItem } from '@flotilla/view';
import { effectiveTokenLimit, isHardReason, reasonsFor, type CondensationReason } from './condensation-reasons.js';
import type { CondenserConfig } from './condenser-config.js';
import { CondenserError } from './errors.js';
import { planForgottenRange } from './forgotten-range.js';
import { renderItem } from './render-items.js';
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
  /**
   * Which rung of the fallback ladder to try (the earlier ones failed): 0 the usual summary; 1 a
   * stricter prompt; 2 the stricter prompt over about half the range; 3 or more no model call, a
   * placeholder naming what was forgotten. See `CONDENSATION_ATTEMPTS`.
   */
  readonly attempt?: number;
  /** Forget everything after the kept head (or after the system prompt) instead of a middle range: the last condensation did not make the view small enough. */
  readonly hardReset?: boolean;
};

/** Rungs of the ladder that call the summarizer; from this one on, the placeholder. */
export const CONDENSATION_ATTEMPTS = 3;

export const CondensationKind = {
  /** A middle range was forgotten between manipulation indices and summarised. */
  summarized: 'summarized',
  /** No safe range made room under a hard trigger: everything after the system prompt (or kept head) was summarised. */
  hardReset: 'hard_reset',
  /** The summarizer failed on every rung of the ladder: the range was forgotten with a placeholder instead of a summary. */
  placeholder: 'placeholder',
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
    ...(options.hardReset === true ? { hardReset: true } : {}),
  });
  if (range === null) {
    if (!reasons.some(isHardReason)) return null;
    throw new CondenserError(
      'nothing_to_forget',
      `The view must be condensed (${reasons.join(', ')}) but holds nothing after the system prompt. ` +
        'The system prompt and tools alone exceed the budget: shorten them or raise the token limit.',
    );
  }
  const attempt = options.attempt ?? 0;
  const end = attempt === 2 && options.hardReset !== true ? smallerEnd(view.items, range) : range.end;
  const forgotten = view.items.slice(range.start, end);
  const system: DraftContext = { ...options.context, source: 'system' };
  let summary: string;
  let summarized: Summarized | undefined;
  if (attempt >= CONDENSATION_ATTEMPTS) {
    summary = `${SUMMARY_PREAMBLE}\n\n${placeholderSummary(forgotten)}`;
  } else {
    summarized = await summarize(forgotten, options, countTokens, attempt > 0);
    const text = summarized.result.content
      .map((part) => part.text)
      .join('')
      .trim();
    if (text === '')
      throw new CondenserError(
        'empty_summary',
        `The summarizer (${summarized.result.model}) returned no text${summarized.result.toolCalls.length > 0 ? ' (it called a tool instead)' : ''}.`,
      );
    summary = `${SUMMARY_PREAMBLE}\n\n${text}`;
  }
  const drafts: EventDraft[] = [
    draftEvent(options.context, 'condensation', {
      forgotten_event_ids: forgotten.map((item) => item.id),
      summary,
      summary_offset: range.start,
      ...(summarized?.result.responseId ? { response_id: summarized.result.responseId } : {}),
    }),
    ...(summarized ? [llmUsageDraft(summarized.result, system, 'condensation')] : []),
  ];
  const forgottenTokens = (weights.before.get(end) ?? 0) - (weights.before.get(range.start) ?? 0);
  const summaryItem: ViewItem = { type: 'condensation_summary', id: 'summary', summary };
  return {
    drafts,
    outcome: {
      kind:
        summarized === undefined
          ? CondensationKind.placeholder
          : range.hardReset
            ? CondensationKind.hardReset
            : CondensationKind.summarized,
      reasons,
      forgottenItems: forgotten.length,
      summaryOffset: range.start,
      itemsBefore: view.items.length,
      itemsAfter: view.items.length - forgotten.length + 1,
      tokensBefore: weights.total,
      tokensAfter: weights.total - forgottenTokens + countTokens(toChatMessages([summaryItem])),
      attempts: summarized?.attempts ?? 0,
      scale: summarized?.scale ?? 0,
    },
  };
}

/** About half the planned range, ending at a safe cut (a manipulation index) past any earlier summary; the whole range when there is none. */
function smallerEnd(items: readonly ViewItem[], range: { start: number; end: number }): number {
  const summaryAt = items.findIndex((item, index) => index >= range.start && item.type === 'condensation_summary');
  const target = range.start + Math.ceil((range.end - range.start) / 2);
  const cuts = manipulationIndices(items).filter(
    (index) => index > range.start && index > summaryAt && index <= target,
  );
  return cuts.at(-1) ?? range.end;
}

const PLACEHOLDER_CALLS = 20;

/** What stands in for a summary when no model could write one: what was forgotten, and the user's words in it. */
function placeholderSummary(forgotten: readonly ViewItem[]): string {
  const counts = new Map<string, number>();
  for (const item of forgotten) counts.set(item.type, (counts.get(item.type) ?? 0) + 1);
  const previous = forgotten.flatMap((item) =>
    item.type === 'condensation_summary' ? [item.summary.replace(SUMMARY_PREAMBLE, '').trim()] : [],
  );
  const requests = forgotten.flatMap((item) =>
    item.type === 'message' && item.role === 'user' ? [renderItem(item).slice(0, 500)] : [],
  );
  // what the agent did, most recent last: the calls it should not repeat blindly
  const calls = forgotten
    .flatMap((item) =>
      item.type === 'action' ? [`- ${item.tool_name} (${item.tool_call_id}): ${item.arguments.slice(0, 160)}`] : [],
    )
    .slice(-PLACEHOLDER_CALLS);
  return [
    `(No summary: the summarizer failed on every attempt. ${forgotten.length} earlier items were removed from the context: ${[...counts].map(([type, count]) => `${count} ${type}`).join(', ')}. The full history stays in the log; re-read files and re-run commands rather than trusting memory.)`,
    ...(previous.length > 0 ? ['', 'The summary before them:', ...previous] : []),
    ...(requests.length > 0 ? ['', "The user's messages among them:", ...requests.map((text) => `- ${text}`)] : []),
    ...(calls.length > 0 ? ['', 'The last tool calls among them:', ...calls] : []),
  ].join('\n');
}

type Summarized = { readonly result: GenerateResult; readonly attempts: number; readonly scale: number };

/**
 * One summary call; when the summarizer's context overflows (or the request is estimated not to
 * fit its known input limit), every event's text is shortened by 20% more and the call retried.
 */
async function summarize(
  forgotten: readonly ViewItem[],
  options: CondenseOptions,
  countTokens: TokenCounter,
  strict: boolean,
): Promise<Summarized> {
  const { config, llm, signal } = options;
  const inputLimit = llm.info.maxInputTokens;
  let calls = 0;
  let lastOverflow: unknown;
  for (let attempt = 0; attempt < config.maxSummaryAttempts; attempt += 1) {
    signal?.throwIfAborted();
    const scale = SHRINK_FACTOR ** attempt;
    const request = summaryRequest({
      forgotten,
      maxEventChars: config.maxEventChars,
      scale,
      maxOutputTokens: config.summaryMaxOutputTokens,
      strict,
    });
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
