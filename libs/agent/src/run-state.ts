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
  /** Every tool call id the conversation's actions used (a model that repeats one gets a fresh one: ids must stay unique). */
  readonly toolCallIds: ReadonlySet<string>;
};

export function runState(events: readonly Event[]): RunState {
  const fold = new RunStateFold();
  fold.append(events);
  return fold.state();
}

/**
 * `runState` kept up to date as events are appended, for a service that holds a conversation
 * across steps: each step then costs the events since the last one, not the whole history.
 */
export class RunStateFold {
  #status: ConversationStatus = 'idle';
  #runStart = 0;
  #hasSystemPrompt = false;
  #iterations = 0;
  #spentUsd = 0;
  #events = 0;
  readonly #toolCallIds = new Set<string>();

  append(events: readonly Event[]): void {
    for (const event of events) {
      this.#events += 1;
      if (event.type === 'state_change' && event.status !== undefined) {
        if (event.status === 'running' && this.#status !== 'running' && this.#status !== 'waiting_for_confirmation') {
          // a new run: what earlier runs spent does not count against it
          this.#runStart = this.#events;
          this.#iterations = 0;
          this.#spentUsd = 0;
        }
        this.#status = event.status;
      } else if (event.type === 'action') {
        this.#toolCallIds.add(event.tool_call_id);
      } else if (event.type === 'system_prompt') {
        this.#hasSystemPrompt = true;
      } else if (event.type === 'llm_usage') {
        this.#spentUsd += event.cost_usd;
        if (event.purpose === 'step') this.#iterations += 1;
      }
    }
  }

  state(): RunState {
    return { status: this.#status, runStart: this.#runStart, iterations: this.#iterations, spentUsd: this.#spentUsd, hasSystemPrompt: this.#hasSystemPrompt, toolCallIds: this.#toolCallIds };
  }
}

export function currentStatus(events: readonly Event[]): ConversationStatus {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'state_change' && event.status !== undefined) return event.status;
  }
  return 'idle';
}
