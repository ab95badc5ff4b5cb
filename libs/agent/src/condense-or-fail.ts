import { condense, isCondenserError } from '@flotilla/condenser';
import { draftEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';
import type { LanguageModel } from '@flotilla/llm';
import type { AgentConfig } from './agent-config.js';
import { estimateTokens } from './token-estimate.js';

/**
 * Answers a condensation request: the condensation (and the summary call's usage), or — when the
 * view cannot be condensed at all — a conversation error that ends the run. LLM failures of the
 * summary call are thrown, for the caller to retry.
 */
export async function condenseOrFail(events: readonly Event[], agent: AgentConfig, llm: LanguageModel, context: DraftContext, signal?: AbortSignal): Promise<EventDraft[]> {
  const system: DraftContext = { ...context, source: 'system' };
  try {
    const result = await condense(events, { config: agent.condenser, llm, context, countTokens: estimateTokens, ...(signal ? { signal } : {}) });
    if (result) return [...result.drafts];
    return [
      draftEvent(system, 'conversation_error', { code: 'condensation_failed', detail: 'A condensation was requested but the condenser found nothing to do.' }),
      draftEvent(system, 'state_change', { status: 'error', reason: 'condensation failed' }),
    ];
  } catch (error) {
    if (!isCondenserError(error) || error.isRetryable) throw error;
    return [
      draftEvent(system, 'conversation_error', { code: `condenser_${error.code}`, detail: error.message }),
      draftEvent(system, 'state_change', { status: 'error', reason: 'condensation failed' }),
    ];
  }
}
