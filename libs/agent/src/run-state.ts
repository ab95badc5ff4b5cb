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
  /**
   * Every response id the conversation's actions and assistant messages carry: the view groups a
   * response's calls by it, so a provider that repeats one (a constant id, a restarted server) gets a fresh one.
   */
  readonly responseIds: ReadonlySet<string>;
};

export function runState(events: readonly Event[]): RunState {
  const fold = new RunStateFold();
  fold.append(events);
  return fold.state();
}

/** A RunStateFold as plain JSON data, to go on from later (see `RunStateFold.resume`). */
export type RunStateCheckpoint = {
  readonly status: ConversationStatus;
  /** Events folded since the current run started (all of them before the first run). */
  readonly since_run_start: number;
  readonly iterations: number;
  readonly spent_usd: number;
  readonly has_system_prompt: boolean;
  /** Every tool call id the conversation's actions used, in the order first used. */
  readonly tool_call_ids: readonly string[];
  /** Every response id the conversation's actions and assistant messages carry, in the order first used. */
  readonly response_ids: readonly string[];
};

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
  readonly #responseIds = new Set<string>();

  /**
   * Goes on from a checkpoint, for a caller whose events array holds `before` events ahead of those
   * it will append (the last events before the checkpoint): `runStart` indexes that array, and is 0
   * when the run started before it.
   */
  static resume(checkpoint: RunStateCheckpoint, before = 0): RunStateFold {
    const fold = new RunStateFold();
    fold.#status = checkpoint.status;
    fold.#events = before;
    fold.#runStart = before - checkpoint.since_run_start;
    fold.#iterations = checkpoint.iterations;
    fold.#spentUsd = checkpoint.spent_usd;
    fold.#hasSystemPrompt = checkpoint.has_system_prompt;
    for (const id of checkpoint.tool_call_ids) fold.#toolCallIds.add(id);
    for (const id of checkpoint.response_ids) fold.#responseIds.add(id);
    return fold;
  }

  checkpoint(): RunStateCheckpoint {
    return {
      status: this.#status,
      since_run_start: this.#events - this.#runStart,
      iterations: this.#iterations,
      spent_usd: this.#spentUsd,
      has_system_prompt: this.#hasSystemPrompt,
      tool_call_ids: [...this.#toolCallIds],
      response_ids: [...this.#responseIds],
    };
  }

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
        this.#responseIds.add(event.response_id);
      } else if (event.type === 'message' && event.response_id !== undefined) {
        this.#responseIds.add(event.response_id);
      } else if (event.type === 'system_prompt') {
        this.#hasSystemPrompt = true;
      } else if (event.type === 'llm_usage') {
        this.#spentUsd += event.cost_usd;
        if (event.purpose === 'step') this.#iterations += 1;
      }
    }
  }

  state(): RunState {
    return {
      status: this.#status,
      runStart: Math.max(0, this.#runStart),
      iterations: this.#iterations,
      spentUsd: this.#spentUsd,
      hasSystemPrompt: this.#hasSystemPrompt,
      toolCallIds: this.#toolCallIds,
      responseIds: this.#responseIds,
    };
  }
}

export function currentStatus(events: readonly Event[]): ConversationStatus {
  for (let index = events.length - 1; index >= 0; index -= 1) {
    const event = events[index]!;
    if (event.type === 'state_change' && event.status !== undefined) return event.status;
  }
  return 'idle';
}
