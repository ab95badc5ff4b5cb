import type { ActionEvent, ConversationStatus, Event } from '@flotilla/events';
import type { NextWork, NextWorkOptions } from './next-work.js';
import type { PendingActions } from './pending-actions.js';

/**
 * What a conversation owes, folded from its events as they are appended: its status, the
 * executable actions without a result (and who started them), and whether a condensation request
 * is open. `nextWork` from it costs what is pending, not the length of the history, so a service
 * that keeps one per cached conversation decides each delivered commit in constant time.
 *
 * Folding the whole log at once and folding it commit by commit give the same answers at every
 * boundary: nothing here depends on where the appends were cut.
 */
export class ConversationProgress {
  #status: ConversationStatus = 'idle';
  /** Executable actions not answered, by event id, in log order. */
  readonly #pending = new Map<string, ActionEvent>();
  /** Tool call ids answered so far (an answer logged before its action still answers it). */
  readonly #answered = new Set<string>();
  /** Runner that recorded the start of each pending action. */
  readonly #startedBy = new Map<string, string>();
  #condensationRequested = false;
  #events = 0;

  static of(events: readonly Event[]): ConversationProgress {
    const progress = new ConversationProgress();
    progress.append(events);
    return progress;
  }

  /** Events folded so far. */
  get length(): number {
    return this.#events;
  }

  append(events: readonly Event[]): void {
    for (const event of events) {
      switch (event.type) {
        case 'state_change':
          if (event.status !== undefined) this.#status = event.status;
          break;
        case 'action':
          if (event.input !== null && !this.#answered.has(event.tool_call_id)) this.#pending.set(event.id, event);
          break;
        case 'execution_started':
          for (const id of event.action_ids) if (this.#pending.has(id)) this.#startedBy.set(id, event.runner);
          break;
        case 'observation':
        case 'user_rejection':
          this.#answer(event.tool_call_id);
          break;
        case 'agent_error':
          if (event.tool_call_id !== undefined) this.#answer(event.tool_call_id);
          break;
        case 'condensation':
          this.#condensationRequested = false;
          break;
        case 'condensation_request':
          this.#condensationRequested = true;
          break;
        default:
          break;
      }
    }
    this.#events += events.length;
  }

  pending(): PendingActions {
    const notStarted: ActionEvent[] = [];
    const started: ActionEvent[] = [];
    for (const action of this.#pending.values()) (this.#startedBy.has(action.id) ? started : notStarted).push(action);
    return { notStarted, started, startedBy: new Map(this.#startedBy) };
  }

  /** Is a condensation requested and not yet answered by one? */
  get condensationRequested(): boolean {
    return this.#condensationRequested;
  }

  /** Runners that started a pending action. */
  startedByRunners(): ReadonlySet<string> {
    return new Set(this.#startedBy.values());
  }

  /** Has the tool call an observation, a rejection or an error in the log? */
  answered(toolCallId: string): boolean {
    return this.#answered.has(toolCallId);
  }

  nextWork(options: NextWorkOptions = {}): NextWork {
    if (this.#status !== 'running') return { kind: 'rest' };
    const alive = options.runnerAlive ?? (() => false);
    const notStarted: ActionEvent[] = [];
    const interrupted: ActionEvent[] = [];
    const inProgress: ActionEvent[] = [];
    for (const action of this.#pending.values()) {
      const runner = this.#startedBy.get(action.id);
      if (runner === undefined) notStarted.push(action);
      else (alive(runner) ? inProgress : interrupted).push(action);
    }
    if (notStarted.length > 0 || interrupted.length > 0) return { kind: 'execute', actions: notStarted, interrupted };
    if (inProgress.length > 0) return { kind: 'in_progress', actions: inProgress };
    if (this.#condensationRequested) return { kind: 'condense' };
    return { kind: 'step' };
  }

  #answer(toolCallId: string): void {
    this.#answered.add(toolCallId);
    for (const [id, action] of this.#pending) {
      if (action.tool_call_id !== toolCallId) continue;
      this.#pending.delete(id);
      this.#startedBy.delete(id);
    }
  }
}
