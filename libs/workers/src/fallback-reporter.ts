import type { FallbackTaken } from '@flotilla/llm';
import type { ConversationRef } from '@flotilla/log';
import type { Logger, ServiceMetrics } from '@flotilla/runtime';

/** The label of a model that is no profile of the operator's (a model of a spec's own): its name is a user's, never a metric label. */
export const OWN_MODEL_LABEL = 'own';

/**
 * What a service that calls models does with each fallback a call takes (ConversationAgents'
 * `onFallback`): counts it in `flotilla_llm_fallbacks_total{from, to, reason}` (profiles' names,
 * `own` for a model of a spec's own; the failure's code) and logs a warning naming the
 * conversation, both models and the failure.
 */
export function fallbackReporter(
  metrics: ServiceMetrics,
  logger: Logger,
): (ref: ConversationRef, taken: FallbackTaken) => void {
  return (ref, { from, to, error }) => {
    metrics.llmFallbacks.inc({
      from: from.profile ?? OWN_MODEL_LABEL,
      to: to.profile ?? OWN_MODEL_LABEL,
      reason: error.code,
    });
    logger.warn(
      { tenant: ref.tenant, conversation: ref.conversation, from, to, code: error.code, status: error.status },
      `model call moved to a fallback: ${from.profile ?? from.model} failed after its retries (${error.message}); the call goes to ${to.profile ?? to.model}`,
    );
  };
}
