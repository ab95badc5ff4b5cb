import type { ActionEvent, Event, SystemPromptEvent } from '@flotilla/events';
import { hasThinking, isResultEvent, type ResultEvent, type ViewItem } from './types.js';

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
 * What a LogIndex still needs of the events before a point, given the view's condensed list at
 * that point (`ViewCheckpoint`): the index entries of the actions that list holds or that still
 * owe a result, of their batches and tool loops, and the counters. Everything else it indexed
 * belongs to forgotten events that nothing later can bring back into a view.
 */
export type IndexState = {
  readonly system_prompt?: SystemPromptEvent;
  readonly unhandled_condensation_request: boolean;
  /** Batches with an action in the list or owed a result, and every batch of their tool loops: action ids in call order, forgotten ones too. */
  readonly batches: readonly {
    readonly key: string;
    readonly action_ids: readonly string[];
    readonly run: number;
    readonly loop?: number;
  }[];
  /** Those batches' tool loops, by id, with their batch keys in order. */
  readonly loops: readonly { readonly id: number; readonly batch_keys: readonly string[] }[];
  /** Per action of the list that has been answered: the ids of its results still in the list, in log order (empty when all were forgotten). */
  readonly results: Readonly<Record<string, readonly string[]>>;
  /** Actions with understood input and no result, in log order: an id of the list, or the whole action when it was forgotten. */
  readonly unmatched: readonly (string | ActionEvent)[];
  /** The latest action of each tool call id that an action above carries (the latest may be a forgotten one). */
  readonly latest_by_tool_call: Readonly<Record<string, string>>;
  readonly run: number;
  readonly loop_count: number;
  /** The tool loop the current run is in. */
  readonly run_loop?: number;
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
      case 'branch':
        this.truncateLoops(event.forgotten_event_ids);
        this.breakRun();
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

  /**
   * The state `restore` needs to go on indexing after this point, for a view whose condensed list
   * is `items` (the ids no condensation forgot, system prompt excluded).
   */
  state(items: readonly ViewItem[]): IndexState {
    const listed = new Set(items.map((item) => item.id));
    const batchKeys = new Set<string>();
    const loops = new Map<number, ToolLoop>();
    const toolCalls = new Set<string>();
    const results: Record<string, string[]> = {};
    const keep = (action: ActionEvent): void => {
      batchKeys.add(action.response_id);
      toolCalls.add(action.tool_call_id);
      const loop = this.batches.get(action.response_id)?.loop;
      if (loop !== undefined) loops.set(loop.id, loop);
    };
    for (const item of items) {
      if (item.type !== 'action') continue;
      keep(item);
      const answers = this.resultsByAction.get(item.id);
      if (answers !== undefined)
        results[item.id] = answers.filter((result) => listed.has(result.id)).map((result) => result.id);
    }
    for (const action of this.unmatched.values()) keep(action);
    if (this.runLoop !== undefined) loops.set(this.runLoop.id, this.runLoop);
    for (const loop of loops.values()) for (const key of loop.batchKeys) batchKeys.add(key);
    const latest: Record<string, string> = {};
    for (const toolCall of toolCalls) latest[toolCall] = this.latestActionByToolCall.get(toolCall) as string;
    return {
      ...(this.systemPrompt === undefined ? {} : { system_prompt: this.systemPrompt }),
      unhandled_condensation_request: this.unhandledCondensationRequest,
      batches: [...batchKeys].map((key) => {
        const batch = this.batches.get(key) as Batch;
        return {
          key,
          action_ids: [...batch.actionIds],
          run: batch.run,
          ...(batch.loop === undefined ? {} : { loop: batch.loop.id }),
        };
      }),
      loops: [...loops.values()].map((loop) => ({ id: loop.id, batch_keys: [...loop.batchKeys] })),
      results,
      unmatched: [...this.unmatched.values()].map((action) => (listed.has(action.id) ? action.id : action)),
      latest_by_tool_call: latest,
      run: this.run,
      loop_count: this.loopCount,
      ...(this.runLoop === undefined ? {} : { run_loop: this.runLoop.id }),
    };
  }

  /** An index that goes on from `state`, whose view's condensed list is `items`. Throws when they do not fit together. */
  static restore(state: IndexState, items: readonly ViewItem[]): LogIndex {
    const index = new LogIndex();
    const byId = new Map<string, ViewItem>();
    for (const item of items) {
      byId.set(item.id, item);
      index.seen.add(item.id);
      if (item.type === 'action') index.actions.set(item.id, item);
    }
    if (state.system_prompt !== undefined) {
      index.systemPrompt = state.system_prompt;
      index.seen.add(state.system_prompt.id);
    }
    index.unhandledCondensationRequest = state.unhandled_condensation_request;
    const loops = new Map(
      state.loops.map((loop) => [loop.id, { id: loop.id, batchKeys: [...loop.batch_keys] } satisfies ToolLoop]),
    );
    for (const batch of state.batches) {
      const loop = batch.loop === undefined ? undefined : loops.get(batch.loop);
      if (batch.loop !== undefined && loop === undefined)
        throw new Error(`view checkpoint: batch ${batch.key} names an unknown tool loop ${batch.loop}`);
      index.batches.set(batch.key, { key: batch.key, actionIds: [...batch.action_ids], run: batch.run, loop });
      for (const id of batch.action_ids) index.seen.add(id);
    }
    for (const [actionId, resultIds] of Object.entries(state.results)) {
      const answers = resultIds.map((id) => {
        const result = byId.get(id);
        if (result === undefined || !isResultEvent(result))
          throw new Error(`view checkpoint: result ${id} of action ${actionId} is not in the view's list`);
        index.actionOfResult.set(id, actionId);
        return result;
      });
      index.resultsByAction.set(actionId, answers);
    }
    for (const entry of state.unmatched) {
      const action = typeof entry === 'string' ? index.actions.get(entry) : entry;
      if (action === undefined)
        throw new Error(`view checkpoint: unmatched action ${String(entry)} is not in the view's list`);
      index.actions.set(action.id, action);
      index.seen.add(action.id);
      index.unmatched.set(action.id, action);
    }
    for (const [toolCall, actionId] of Object.entries(state.latest_by_tool_call))
      index.latestActionByToolCall.set(toolCall, actionId);
    index.run = state.run;
    index.loopCount = state.loop_count;
    index.runLoop = state.run_loop === undefined ? undefined : loops.get(state.run_loop);
    return index;
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

  /**
   * A branch forgets the calls after its point: the tool loops they were in end where it cut
   * them, as they had at that point (a condensation instead cuts a loop as a whole).
   */
  private truncateLoops(forgottenIds: readonly string[]): void {
    for (const id of forgottenIds) {
      const action = this.actions.get(id);
      const batch = action === undefined ? undefined : this.batches.get(action.response_id);
      const loop = batch?.loop;
      if (batch === undefined || loop === undefined) continue;
      const at = loop.batchKeys.indexOf(batch.key);
      if (at !== -1) loop.batchKeys.splice(at, 1);
      batch.loop = undefined;
    }
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
