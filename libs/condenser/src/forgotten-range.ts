import { firstCuttableIndex, manipulationIndices, type ViewItem } from '@flotilla/view';
import { isHardReason, type CondensationReason } from './condensation-reasons.js';
import type { CondenserConfig } from './condenser-config.js';
import type { ViewTokens } from './token-count.js';

/** Forget `items.slice(start, end)` and put the summary at `start`. Both ends are manipulation indices. */
export type ForgottenRange = {
  readonly start: number;
  readonly end: number;
  /** No safe range made enough room, so everything after the system prompt (and maybe the head) goes. */
  readonly hardReset: boolean;
};

export type RangeInput = {
  readonly items: readonly ViewItem[];
  readonly weights: ViewTokens;
  readonly reasons: readonly CondensationReason[];
  readonly config: Pick<CondenserConfig, 'maxEvents' | 'keepFirst' | 'minimumProgress' | 'summaryMaxOutputTokens'>;
  /** The effective token limit, when one is known. */
  readonly tokenLimit?: number;
  /** Skip the search for a middle range: forget everything after the head (or after the system prompt), as a hard trigger does when nothing smaller makes room. */
  readonly hardReset?: boolean;
};

type Targets = { readonly items: number; readonly tokens: number };

/**
 * What "roughly half" means for the reasons at hand: each trigger halves its own dimension. The
 * token trigger keeps room for the summary (at most `summaryMaxOutputTokens`) inside its half;
 * a request halves what is there now, the summary being far smaller than what it replaces.
 */
function targetsFor(input: RangeInput): Targets {
  const { items, weights, reasons, config, tokenLimit } = input;
  let itemTarget = Number.POSITIVE_INFINITY;
  let tokenTarget = Number.POSITIVE_INFINITY;
  if (reasons.includes('events')) itemTarget = Math.min(itemTarget, Math.floor(config.maxEvents / 2));
  if (reasons.includes('tokens') && tokenLimit !== undefined)
    tokenTarget = Math.min(tokenTarget, Math.floor(tokenLimit / 2) - config.summaryMaxOutputTokens);
  if (reasons.includes('request')) {
    itemTarget = Math.min(itemTarget, Math.ceil(items.length / 2));
    tokenTarget = Math.min(tokenTarget, Math.ceil(weights.total / 2));
  }
  return { items: itemTarget, tokens: tokenTarget };
}

function tokensBefore(weights: ViewTokens, position: number): number {
  const value = weights.before.get(position);
  if (value === undefined) throw new Error(`no token weight at position ${position}, which is not a block boundary`);
  return value;
}

/**
 * Chooses the range a condensation forgets (see README.md):
 * 1. keep the system prompt and the first `keepFirst` items, the head snapped forward to a
 *    manipulation index, but never past an earlier summary, which the range always includes
 *    (so summaries roll);
 * 2. forget up to the first manipulation index that brings the view under its targets while
 *    forgetting at least `minimumProgress` of it; failing that, up to the end of the view;
 * 3. when no such range exists, or it leaves the view over its hard token limit: null for a
 *    soft trigger, a hard reset for a hard one (or at once, when `hardReset` asks for one).
 * Returns null when nothing should (or can) be forgotten.
 */
export function planForgottenRange(input: RangeInput): ForgottenRange | null {
  const { items, weights, reasons, config, tokenLimit } = input;
  const first = firstCuttableIndex(items);
  const length = items.length;
  if (length <= first || reasons.length === 0) return null;
  const indices = manipulationIndices(items);
  const summaryAt = items.findIndex((item, index) => index >= first && item.type === 'condensation_summary');
  const rollCap = summaryAt === -1 ? length : summaryAt;
  const wantedHead = first + config.keepFirst;
  const head = Math.min(indices.find((index) => index >= wantedHead) ?? length, rollCap);

  if (input.hardReset === true) return hardReset(input, indices, Math.min(wantedHead, rollCap));
  const targets = targetsFor(input);
  const allowance = config.summaryMaxOutputTokens;
  const headTokens = tokensBefore(weights, head);
  let best: { end: number; tokensAfter: number } | undefined;
  for (const end of indices) {
    // A range must take the earlier summary with it, so that summaries roll.
    if (end <= head || end <= summaryAt) continue;
    if (!isProgress(input, head, end)) continue;
    const forgottenItems = end - head;
    const forgottenTokens = tokensBefore(weights, end) - headTokens;
    const itemsAfter = length - forgottenItems + 1;
    const tokensAfter = weights.total - forgottenTokens;
    if (itemsAfter <= targets.items && tokensAfter <= targets.tokens) return { start: head, end, hardReset: false };
    best = { end, tokensAfter };
  }
  const hard = reasons.some(isHardReason);
  const overLimit =
    best !== undefined &&
    reasons.includes('tokens') &&
    tokenLimit !== undefined &&
    best.tokensAfter + allowance > tokenLimit;
  if (best !== undefined && !overLimit) return { start: head, end: best.end, hardReset: false };
  if (!hard) return null;
  return hardReset(input, indices, Math.min(wantedHead, rollCap));
}

/** Forgetting items[start..end) forgets at least `minimumProgress` of the condensable view, in items or in tokens. */
function isProgress(input: RangeInput, start: number, end: number): boolean {
  const { items, weights, config } = input;
  const first = firstCuttableIndex(items);
  // The epsilon keeps 0.25 * 4 from rounding up to 2 through floating-point noise.
  const minimumItems = Math.ceil(config.minimumProgress * (items.length - first) - 1e-9);
  const forgottenTokens = tokensBefore(weights, end) - tokensBefore(weights, start);
  const minimumTokens = config.minimumProgress * (weights.total - weights.system);
  return end - start >= minimumItems || (forgottenTokens > 0 && forgottenTokens >= minimumTokens);
}

/**
 * Forget everything after the system prompt, keeping the head (snapped back to a manipulation
 * index) only if it still fits under the token limit and forgetting the rest is still progress.
 */
function hardReset(input: RangeInput, indices: readonly number[], wantedHead: number): ForgottenRange {
  const { items, weights, tokenLimit, config } = input;
  const first = firstCuttableIndex(items);
  const head = indices.filter((index) => index <= wantedHead).at(-1) ?? first;
  const fits = tokenLimit === undefined || tokensBefore(weights, head) + config.summaryMaxOutputTokens <= tokenLimit;
  if (head > first && head < items.length && fits && isProgress(input, head, items.length))
    return { start: head, end: items.length, hardReset: true };
  return { start: first, end: items.length, hardReset: true };
}
