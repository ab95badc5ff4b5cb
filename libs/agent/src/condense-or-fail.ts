import { CONDENSATION_ATTEMPTS, condense, isCondenserError } from '@flotilla/condenser';
import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';
import { isLlmError, type LanguageModel } from '@flotilla/llm';
import type { AgentConfig } from './agent-config.js';
import { estimateTokens } from './token-estimate.js';

/** The code of the event that records one failed rung of the condensation ladder. */
export const CONDENSATION_ATTEMPT_FAILED = 'condensation_attempt_failed';

const NEXT_RUNG = [
  'a stricter prompt',
  'the stricter prompt over about half the range',
  'a placeholder instead of a model summary',
] as const;

/**
 * The failed attempts at answering the pending condensation request, read from the log: each is
 * a `conversation_error` appended after the request, so the ladder is decided from the log and
 * survives any process dying between attempts.
 */
export function failedCondensationAttempts(events: readonly Event[]): number {
  let failed = 0;
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'condensation_request' || event.type === 'condensation') break;
    if (event.type === 'conversation_error' && event.code === CONDENSATION_ATTEMPT_FAILED) failed += 1;
  }
  return failed;
}

/** The code of the event that ends a run whose condensations did not make its view small enough. */
export const CONDENSATION_NO_PROGRESS = 'condensation_no_progress';

/**
 * The step's condensation requests in a row, the open one included: those it appended (source
 * `system`) since the model was last called for a step (its `llm_usage`) or the user last acted.
 * The step asks again only when the view is still too large after the last condensation (or the
 * model reported an overflow again), so this counts condensations that did not make room.
 */
export function condensationRequestsInRow(events: readonly Event[]): number {
  let requests = 0;
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.source === 'user' || (event.type === 'llm_usage' && event.purpose === 'step')) break;
    if (event.type === 'condensation_request' && event.source === 'system') requests += 1;
  }
  return requests;
}

/** The step's request in a row that is answered with a hard reset; the one after it ends the run. */
export const HARD_RESET_REQUEST = 2;

/**
 * Answers a condensation request, whatever the summarizer does: the condensation (and the summary
 * call's usage); or, when a summary attempt fails (no text, an error after the model client's own
 * retries, an overflow after every shortening), a visible `conversation_error` naming the failure
 * and the next rung, which wakes the condenser again for it: a stricter prompt, then about half the
 * range, then a placeholder that needs no model. Only a view that cannot be condensed at all (the
 * system prompt alone is over budget) ends the run in `error`. A cancelled call is thrown.
 *
 * Condensations never repeat without bound: when the step asks again without having called the
 * model (`condensationRequestsInRow`), the view was not made small enough, and the second request
 * in a row is answered with a hard reset (everything after the kept head forgotten); a third ends
 * the run in `error` naming why, whatever the settings, the view or the models do.
 */
export async function condenseOrFail(
  events: readonly Event[],
  agent: AgentConfig,
  llm: LanguageModel,
  context: DraftContext,
  signal?: AbortSignal,
): Promise<EventDraft[]> {
  const system: DraftContext = { ...context, source: 'system' };
  const attempt = failedCondensationAttempts(events);
  const inRow = condensationRequestsInRow(events);
  if (inRow > HARD_RESET_REQUEST) {
    const detail =
      `The view was condensed ${inRow - 1} times in a row, the last time with a hard reset, and the step still found it too large to call the model ` +
      `(last request: ${lastRequestReason(events)}). Raise the condenser's limits or the model's context (condenser.maxEvents, condenser.maxTokens), or start a new conversation.`;
    return [
      draftEvent(system, 'conversation_error', { code: CONDENSATION_NO_PROGRESS, detail }),
      draftEvent(system, 'state_change', { status: 'error', reason: 'condensation made no room' }),
    ];
  }
  try {
    const result = await condense(events, {
      config: agent.condenser,
      llm,
      context,
      countTokens: estimateTokens,
      attempt,
      ...(inRow === HARD_RESET_REQUEST ? { hardReset: true } : {}),
      ...(signal ? { signal } : {}),
    });
    if (result) return [...result.drafts];
    return [
      draftEvent(system, 'conversation_error', {
        code: 'condensation_failed',
        detail: 'A condensation was requested but the condenser found nothing to do.',
      }),
      draftEvent(system, 'state_change', { status: 'error', reason: 'condensation failed' }),
    ];
  } catch (error) {
    signal?.throwIfAborted();
    if (isLlmError(error) && error.code === 'cancelled') throw error;
    const summaryFailed =
      isLlmError(error) ||
      (isCondenserError(error) && (error.code === 'empty_summary' || error.code === 'summary_overflow'));
    if (summaryFailed && attempt < CONDENSATION_ATTEMPTS) {
      const detail = `Summary attempt ${attempt + 1} of ${CONDENSATION_ATTEMPTS} failed (${(error as Error).message.replace(/\.$/, '')}); next: ${NEXT_RUNG[attempt]}.`;
      return [draftEvent(system, 'conversation_error', { code: CONDENSATION_ATTEMPT_FAILED, detail })];
    }
    if (!isCondenserError(error)) throw error;
    return [
      draftEvent(system, 'conversation_error', { code: `condenser_${error.code}`, detail: error.message }),
      draftEvent(system, 'state_change', { status: 'error', reason: 'condensation failed' }),
    ];
  }
}

function lastRequestReason(events: readonly Event[]): string {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'condensation_request') return event.reason ?? 'no reason given';
  }
  return 'none found';
}
