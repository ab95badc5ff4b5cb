import type { ActionEvent, Event } from '@flotilla/events';
import { hasThinking, isResultEvent, type ResultEvent } from './types.js';

/**
 * An atomic tool loop: the batches of one run (tool calls with no user turn, agent message or
 * summary between them) from the first batch that carries thinking blocks to the end of the
 * run. With Anthropic extended thinking, the continuation of a loop must keep the signed thinking
 * that opened it, so a loop is kept or forgotten as a whole.
 */
export type ToolLoop = { readonly id: number; readonly batchKeys: string[] };

/** The actions of one LLM response (parallel tool calls share its `response_id`). */
export type Batch = {
  readonly key: string;
  /** Action ids in call order. */
  readonly actionIds: string[];
  readonly run: number;
  loop: ToolLoop | undefined;
};

/**
 * Indexes a conversation's events in log order, O(1) per event: actions, batches, the results
 * answering each action, tool loops and the actions still waiting for a result. It never forgets
 * anything; condensations only change what a view shows.
 */
export class LogIndex {
  systemPrompt: Extract<Event, { type: 'system_prompt' }> | undefined;
  unhandledCondensationRequest = false;
  readonly actions = new Map<string, ActionEvent>();
  readonly batches = new Map<string, Batch>();
  /** Results per action id, in log order; the first one is the answer, the rest are duplicates. */
  readonly resultsByAction = new Map<string, ResultEvent[]>();
  /** Which action each result answers; results that answer no earlier action are absent (orphans). */
  readonly actionOfResult = new Map<string, string>();
  private readonly seen = new Set<string>();
  private readonly latestActionByToolCall = new Map<string, string>();
  private readonly unmatched = new Map<string, ActionEvent>();
  private run = 0;
  private runLoop: ToolLoop | undefined;
  private loopCount = 0;

  /** Records an event; returns false when its id was already recorded (a replayed append). */
  add(event: Event): boolean {
    if (this.seen.has(event.id)) return false;
    this.seen.add(event.id);
    switch (event.type) {
      case 'action':
        this.addAction(event);
        break;
      case 'observation':
      case 'user_rejection':
        this.addResult(event);
        break;
      case 'agent_error':
        if (isResultEvent(event)) this.addResult(event);
        else this.breakRun();
        break;
      case 'system_prompt':
        this.systemPrompt = event;
        this.breakRun();
        break;
      case 'message':
        this.breakRun();
        break;
      case 'condensation':
        this.unhandledCondensationRequest = false;
        this.breakRun();
        break;
      case 'condensation_request':
        this.unhandledCondensationRequest = true;
        break;
      default:
        break;
    }
    return true;
  }

  /** Actions with understood input and no result yet, in log order: what a tool runner still owes. */
  unmatchedActions(): ActionEvent[] {
    return [...this.unmatched.values()];
  }

  /** The action a result answers, if it answers one that came before it in the log. */
  actionFor(result: ResultEvent): ActionEvent | undefined {
    const actionId = this.actionOfResult.get(result.id);
    return actionId === undefined ? undefined : this.actions.get(actionId);
  }

  batchOf(action: ActionEvent): Batch {
    const batch = this.batches.get(action.response_id);
    if (batch === undefined) throw new Error(`action ${action.id} was not indexed`);
    return batch;
  }

  /** A user turn, agent message, summary or system prompt ends the current run of tool calls. */
  private breakRun(): void {
    this.run += 1;
    this.runLoop = undefined;
  }

  private addAction(action: ActionEvent): void {
    this.actions.set(action.id, action);
    this.latestActionByToolCall.set(action.tool_call_id, action.id);
    if (action.input !== null) this.unmatched.set(action.id, action);
    let batch = this.batches.get(action.response_id);
    if (batch === undefined) {
      batch = { key: action.response_id, actionIds: [], run: this.run, loop: this.runLoop };
      this.batches.set(batch.key, batch);
      this.runLoop?.batchKeys.push(batch.key);
    }
    batch.actionIds.push(action.id);
    const opensLoop = batch.loop === undefined && batch.run === this.run && this.runLoop === undefined;
    if (opensLoop && hasThinking(action)) {
      this.loopCount += 1;
      this.runLoop = { id: this.loopCount, batchKeys: [batch.key] };
      batch.loop = this.runLoop;
    }
  }

  private addResult(result: ResultEvent): void {
    const byId = result.action_id === undefined ? undefined : this.actions.get(result.action_id);
    const byCall = result.tool_call_id === undefined ? undefined : this.latestActionByToolCall.get(result.tool_call_id);
    const actionId = result.action_id === undefined ? byCall : byId?.id;
    if (actionId === undefined) return;
    this.actionOfResult.set(result.id, actionId);
    this.unmatched.delete(actionId);
    const results = this.resultsByAction.get(actionId);
    if (results === undefined) this.resultsByAction.set(actionId, [result]);
    else results.push(result);
  }
}
