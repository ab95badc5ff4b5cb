import { draftEvent, type DraftContext, type EventDraft } from '@flotilla/events';
import type { GenerateResult } from '@flotilla/llm';

/**
 * The llm_usage event of one model call: tokens, latency and cost, tagged with what the call was
 * for, and the fallback that made it when the spec's model's provider was out (protocol v5).
 */
export function llmUsageDraft(
  result: GenerateResult,
  context: DraftContext,
  purpose: 'step' | 'condensation' | 'other',
): EventDraft {
  return draftEvent(context, 'llm_usage', {
    model: result.model,
    purpose,
    response_id: result.responseId,
    prompt_tokens: result.usage.inputTokens,
    completion_tokens: result.usage.outputTokens,
    cache_read_tokens: result.usage.cacheReadTokens,
    cache_write_tokens: result.usage.cacheWriteTokens,
    reasoning_tokens: result.usage.reasoningTokens,
    latency_ms: result.latencyMs,
    cost_usd: result.costUsd ?? 0,
    ...(result.fallback === undefined ? {} : { fallback: result.fallback }),
  });
}
