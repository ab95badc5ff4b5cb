import type { ConversationStatus, Event } from '@flotilla/events';

/** What the log says about the current run. */
export type RunState = {
  readonly status: ConversationStatus;
  /** Index of the first event of the current run (after the last status change to running). */
  readonly runStart: number;
  /** LLM steps taken in the current run. */
  readonly iterations: number;
  /** Spend in the current run, from llm_usage events. */
  readonly spentUsd: number;
  readonly hasSystemPrompt: boolean;
};

export function runState(events: readonly Event[]): RunState {
  let status: ConversationStatus = 'idle';
  let runStart = 0;
  let hasSystemPrompt = false;
  for (let index = 0; index < events.length; index += 1) {
    const event = events[index]!;
    if (event.type === 'state_change' && event.status !== undefined) {
      if (event.status === 'running' && status !== 'running' && status !== 'waiting_for_confirmation') runStart = index + 1;
      status = event.status;
    } else if (event.type === 'system_prompt') {
      hasSystemPrompt = true;
    }
  }
  let iterations = 0;
  let spentUsd = 0;
  for (let index = runStart; index < events.length; index += 1) {
    const event = events[index]!;
    if (event.type === 'llm_usage') {
      spentUsd += event.cost_usd;
      if (event.purpose === 'step') iterations += 1;
    }
  }
  return { status, runStart, iterations, spentUsd, hasSystemPrompt };
}

export function currentStatus(events: readonly Event[]): ConversationStatus {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'state_change' && event.status !== undefined) return event.status;
  }
  return 'idle';
}
