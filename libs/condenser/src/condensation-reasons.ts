import type { View } from '@flotilla/view';
import type { CondenserConfig } from './condenser-config.js';
import { approximateTokens, weighView, type TokenCounter } from './token-count.js';

/**
 * Why a view should be condensed now:
 * - `request`: a condensation_request came after the last condensation (hard);
 * - `tokens`: the view's estimated prompt tokens exceed the effective token limit (hard);
 * - `events`: the view holds more than `maxEvents` items (soft).
 */
export const CondensationReason = {
  request: 'request',
  tokens: 'tokens',
  events: 'events',
} as const;
export type CondensationReason = (typeof CondensationReason)[keyof typeof CondensationReason];

export type ReasonOptions = {
  /** The agent model's input limit, when known; the stricter of it and `config.maxTokens` applies. */
  readonly maxInputTokens?: number;
  readonly countTokens?: TokenCounter;
};

/** A hard reason must be acted on even if that means forgetting everything after the system prompt. */
export function isHardReason(reason: CondensationReason): boolean {
  return reason !== 'events';
}

/** The stricter of the configured token limit and the model's input limit, or undefined when neither is known. */
export function effectiveTokenLimit(
  config: Pick<CondenserConfig, 'maxTokens'>,
  maxInputTokens?: number,
): number | undefined {
  const limits = [config.maxTokens, maxInputTokens].filter((limit): limit is number => limit !== undefined);
  return limits.length === 0 ? undefined : Math.min(...limits);
}

/**
 * The triggers that hold for this view, hard ones first. Empty means: call the model. A step
 * worker that gets a non-empty answer appends a condensation_request instead of stepping.
 */
export function condensationReasons(
  view: View,
  config: CondenserConfig,
  options: ReasonOptions = {},
): CondensationReason[] {
  const limit = effectiveTokenLimit(config, options.maxInputTokens);
  const tokens = limit === undefined ? 0 : weighView(view, options.countTokens ?? approximateTokens).total;
  return reasonsFor(view, config, limit, tokens);
}

/** The reasons, given the effective token limit and the view's weighed tokens. */
export function reasonsFor(
  view: View,
  config: Pick<CondenserConfig, 'maxEvents'>,
  tokenLimit: number | undefined,
  tokens: number,
): CondensationReason[] {
  const reasons: CondensationReason[] = [];
  if (view.unhandledCondensationRequest) reasons.push('request');
  if (tokenLimit !== undefined && tokens > tokenLimit) reasons.push('tokens');
  if (view.items.length > config.maxEvents) reasons.push('events');
  return reasons;
}
