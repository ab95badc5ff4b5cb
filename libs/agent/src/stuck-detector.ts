import type { Event } from '@flotilla/events';

export const StuckReason = {
  RepeatedActionObservation: 'repeated_action_observation',
  RepeatedActionError: 'repeated_action_error',
  Monologue: 'monologue',
  AlternatingPattern: 'alternating_pattern',
} as const;
export type StuckReason = (typeof StuckReason)[keyof typeof StuckReason];

export type StuckThresholds = {
  /** Identical action with identical observation, this many times in a row. Default 4. */
  readonly actionObservation: number;
  /** Identical action failing with the identical error, this many times in a row. Default 3. */
  readonly actionError: number;
  /** Agent messages in a row with nothing else between. Default 3. */
  readonly monologue: number;
  /** Steps forming A,B,A,B,… Default 6. */
  readonly alternating: number;
};

export const DEFAULT_STUCK_THRESHOLDS: StuckThresholds = {
  actionObservation: 4,
  actionError: 3,
  monologue: 3,
  alternating: 6,
};

type Step =
  | { readonly kind: 'tool'; readonly action: string; readonly result: string; readonly failed: boolean }
  | { readonly kind: 'message' };

/**
 * Looks at what the agent did since the last user message (within the run) and says whether it is going in
 * circles. Only completed tool calls count: a call still awaiting its result is not a repeat yet.
 */
export function detectStuck(
  events: readonly Event[],
  thresholds: StuckThresholds = DEFAULT_STUCK_THRESHOLDS,
  /** Index of the first event to consider (the start of the current run). */
  from = 0,
): StuckReason | undefined {
  const { steps } = stepsSinceUserMessage(events, stuckStepsNeeded(thresholds), from);
  const tail = (count: number): Step[] | undefined => (steps.length >= count ? steps.slice(-count) : undefined);

  const repeated = tail(thresholds.actionObservation);
  if (repeated && allSameTool(repeated, false)) return StuckReason.RepeatedActionObservation;
  const failing = tail(thresholds.actionError);
  if (failing && allSameTool(failing, true)) return StuckReason.RepeatedActionError;
  const talking = tail(thresholds.monologue);
  if (talking && talking.every((step) => step.kind === 'message')) return StuckReason.Monologue;
  const alternating = tail(thresholds.alternating);
  if (alternating && isAlternating(alternating)) return StuckReason.AlternatingPattern;
  return undefined;
}

/** How many of the last steps `detectStuck` looks at with these thresholds. */
export function stuckStepsNeeded(thresholds: StuckThresholds): number {
  return Math.max(thresholds.actionObservation, thresholds.actionError, thresholds.monologue, thresholds.alternating);
}

/**
 * The lowest index of `events` that `detectStuck` reads for thresholds of up to `steps` steps:
 * from any later end of the log it reads no further back (later events only bring it steps sooner).
 */
export function stuckLookback(events: readonly Event[], steps: number, from = 0): number {
  return stepsSinceUserMessage(events, steps, from).reached;
}

function allSameTool(steps: readonly Step[], failed: boolean): boolean {
  const first = steps[0];
  if (!first || first.kind !== 'tool' || first.failed !== failed) return false;
  return steps.every(
    (step) =>
      step.kind === 'tool' && step.failed === failed && step.action === first.action && step.result === first.result,
  );
}

function isAlternating(steps: readonly Step[]): boolean {
  const [a, b] = steps;
  if (!a || !b || a.kind !== 'tool' || b.kind !== 'tool') return false;
  if (a.action === b.action && a.result === b.result) return false;
  return steps.every((step, index) => {
    const model = index % 2 === 0 ? a : b;
    return step.kind === 'tool' && step.action === model.action && step.result === model.result;
  });
}

/**
 * The last `needed` completed steps since the last user message, oldest first. Walks back from
 * the end (results come after their actions), so the cost is bounded by the thresholds, not by
 * the length of the run.
 */
function stepsSinceUserMessage(
  events: readonly Event[],
  needed: number,
  from: number,
): { steps: Step[]; reached: number } {
  const results = new Map<string, { text: string; failed: boolean }>();
  const steps: Step[] = [];
  let reached = events.length;
  for (let index = events.length - 1; index >= from && steps.length < needed; index -= 1) {
    reached = index;
    const event = events[index]!;
    if (event.type === 'message' && event.source === 'user') break;
    if (event.type === 'observation')
      results.set(event.tool_call_id, { text: contentKey(event.content), failed: event.is_error });
    else if (event.type === 'agent_error' && event.tool_call_id)
      results.set(event.tool_call_id, { text: event.error, failed: true });
    else if (event.type === 'action') {
      const result = results.get(event.tool_call_id);
      if (result)
        steps.push({
          kind: 'tool',
          action: `${event.tool_name} ${normalizeArguments(event)}`,
          result: result.text,
          failed: result.failed,
        });
    } else if (event.type === 'message' && event.source === 'agent') {
      steps.push({ kind: 'message' });
    }
  }
  return { steps: steps.reverse(), reached };
}

function normalizeArguments(event: Extract<Event, { type: 'action' }>): string {
  if (event.input === null) return event.arguments;
  const { summary: _summary, security_risk: _risk, ...input } = event.input;
  return stableStringify(input);
}

function contentKey(content: readonly { type: string; text?: string }[]): string {
  return content.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');
}

function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${stableStringify(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}
