import type { View } from '@flotilla/view';
import {
  effectiveTokenLimit,
  isHardReason,
  reasonsFor,
  type CondensationReason,
  type ReasonOptions,
} from './condensation-reasons.js';
import type { CondenserConfig } from './condenser-config.js';
import { planForgottenRange } from './forgotten-range.js';
import { approximateTokens, weighView } from './token-count.js';

/**
 * The step's question before calling the model: must this view be condensed first? Returns the
 * reasons (tokens, events) when a hard trigger holds, or when only the soft one holds and a safe
 * range exists to forget; null otherwise (then the model is called on the view as it is).
 * A pending condensation_request is not counted: the condenser already owes that one.
 */
export function shouldCondense(
  view: View,
  config: CondenserConfig,
  options: ReasonOptions & {
    /** The view's token estimate when the caller has it already (it built the prompt). */
    readonly totalTokens?: number;
  } = {},
): CondensationReason[] | null {
  const limit = effectiveTokenLimit(config, options.maxInputTokens);
  const countTokens = options.countTokens ?? approximateTokens;
  // Weighing the view block by block is the expensive part: do it only when a decision needs it.
  const tokens = limit === undefined ? 0 : (options.totalTokens ?? weighView(view, countTokens).total);
  const reasons = reasonsFor(view, config, limit, tokens).filter((reason) => reason !== 'request');
  if (reasons.length === 0) return null;
  if (reasons.some(isHardReason)) return reasons;
  const range = planForgottenRange({
    items: view.items,
    weights: weighView(view, countTokens),
    reasons,
    config,
    ...(limit === undefined ? {} : { tokenLimit: limit }),
  });
  return range === null ? null : reasons;
}
