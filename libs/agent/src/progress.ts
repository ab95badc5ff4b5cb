import type { ActionEvent, Event } from '@flotilla/events';
import { foldState, initialState, type ConversationState, type PendingAction } from '@flotilla/state';
import { finishCalledAfter } from './finish.js';
import { PrepareDuty, type PrepareCheckpoint, type PrepareNeeds } from './prepare-duty.js';
import { TASK_TOOL } from './sub-agents.js';

/**
 * What a conversation needs next, decided from its whole log (never from one delivered commit) by
 * `ConversationProgress.nextWork` below as the events are folded (`nextWork`, next-work.ts, folds a
 * whole log at once). That is the one place that decides it: every service and `LocalConversation`
 * act on its answer, each on its kind: tool runners on `execute` (and wait on `in_progress`), step
 * workers on `step` (a model call) and `finish` (the agent's finish call came back: the run ends,
 * no model call), the condenser on `condense`, and tool runners on `prepare`: the owner of the
 * workspace reads what it says (repository context, skills, path rules) into the log
 * (`workspace_context`) before the first step of a spec that turns skills on, and runs the spec's
 * hooks that come before a step or a finish (`PrepareNeeds`); the step waits for it. The delegator
 * owes `delegate`: the pending `task` calls whose children it has not started (after the batch's
 * tool calls are answered); `delegated` means the children work, and their ends, not this log, wake
 * the delegator to answer the calls. `rest` means nobody owes anything (the conversation is not
 * running).
 */
export type NextWork =
  | { readonly kind: 'rest' }
  | { readonly kind: 'execute'; readonly actions: readonly ActionEvent[]; readonly interrupted: readonly ActionEvent[] }
  | { readonly kind: 'in_progress'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'finish' }
  | { readonly kind: 'condense' }
  | { readonly kind: 'prepare'; readonly needs: PrepareNeeds }
  | { readonly kind: 'delegate'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'delegated'; readonly actions: readonly ActionEvent[] }
  | { readonly kind: 'step' };

export type NextWorkOptions = {
  /** Is the runner that recorded an action's start still alive? Default: no (in-process after a restart). */
  readonly runnerAlive?: (runner: string) => boolean;
};

/** Executable actions without a result, split by whether a runner recorded their start. */
export type PendingActions = {
  readonly notStarted: readonly ActionEvent[];
  /** Started and unanswered: running now, or cut off by a crash. */
  readonly started: readonly ActionEvent[];
  /** Runner that recorded the start of each started action. */
  readonly startedBy: ReadonlyMap<string, string>;
};

/**
 * A `ConversationProgress` as data (for a checkpoint): the folded state, with the pending actions
 * whole. `answered` holds the answers logged before their action (the state's early answers).
 */
export type ProgressCheckpoint = {
  readonly status: ConversationState['status'];
  /** The actions waiting for a result, in log order (unparseable ones included: their answer is still due). */
  readonly pending: readonly ActionEvent[];
  readonly answered: readonly string[];
  /** The runner that started each started pending action. */
  readonly started_by: Readonly<Record<string, string>>;
  readonly condensation_requested: boolean;
  /** The agent's finish call ended its last batch (finishCalledAfter). */
  readonly finish_called: boolean;
  /** What the workspace's tool runner owes besides actions (its context, hooks). */
  readonly prepare: PrepareCheckpoint;
  /** Events folded. */
  readonly events: number;
};

/**
 * What a conversation owes, folded from its events as they are appended: its status, the
 * executable actions without a result (and who started them), whether a condensation request
 * is open, and whether the agent called finish. `nextWork` from it costs what is pending, not the length of the history, so a service
 * that keeps one per cached conversation decides each delivered commit in constant time.
 *
 * The fold is the snapshot's (`foldState`, libs/state): the gateway's commands, decided from the
 * KV snapshot, and the services, deciding from the events they hold, see the same pending
 * actions. This keeps the actions themselves beside that state, for the tool runner to run them.
 *
 * Folding the whole log at once and folding it commit by commit give the same answers at every
 * boundary: nothing here depends on where the appends were cut.
 */
export class ConversationProgress {
  readonly #state: ConversationState = initialState();
  /** The pending actions, by event id. */
  readonly #actions = new Map<string, ActionEvent>();
  #finishCalled = false;
  readonly #duty: PrepareDuty;
  #events = 0;

  constructor(duty = new PrepareDuty()) {
    this.#duty = duty;
  }

  static of(events: readonly Event[]): ConversationProgress {
    const progress = new ConversationProgress();
    progress.append(events);
    return progress;
  }

  /** Goes on from a checkpoint, as if the events it was taken after had been appended. */
  static resume(checkpoint: ProgressCheckpoint): ConversationProgress {
    const progress = new ConversationProgress(PrepareDuty.resume(checkpoint.prepare));
    const state = progress.#state;
    state.status = checkpoint.status;
    state.condensation_requested = checkpoint.condensation_requested;
    state.early_answers = [...checkpoint.answered];
    for (const action of checkpoint.pending) {
      state.pending_actions.push({
        id: action.id,
        tool_call_id: action.tool_call_id,
        tool_name: action.tool_name,
        executable: action.input !== null,
        started_by: action.input !== null ? (checkpoint.started_by[action.id] ?? null) : null,
      });
      progress.#actions.set(action.id, action);
    }
    progress.#finishCalled = checkpoint.finish_called;
    progress.#events = checkpoint.events;
    return progress;
  }

  checkpoint(): ProgressCheckpoint {
    const started: Record<string, string> = {};
    for (const action of this.#state.pending_actions)
      if (action.started_by !== null) started[action.id] = action.started_by;
    return {
      status: this.#state.status,
      pending: this.#state.pending_actions.flatMap((action) => this.#actions.get(action.id) ?? []),
      answered: [...this.#state.early_answers],
      started_by: started,
      condensation_requested: this.#state.condensation_requested,
      finish_called: this.#finishCalled,
      prepare: this.#duty.checkpoint(),
      events: this.#events,
    };
  }

  /** Events folded so far. */
  get length(): number {
    return this.#events;
  }

  /** The folded state (status, pending actions, open condensation request), as the snapshot holds it. */
  get state(): Readonly<ConversationState> {
    return this.#state;
  }

  append(events: readonly Event[]): void {
    for (const event of events) {
      const waiting = this.#state.pending_actions.length;
      const [statusBefore, finishBefore] = [this.#state.status, this.#finishCalled];
      foldState(this.#state, event);
      this.#finishCalled = finishCalledAfter(this.#finishCalled, event);
      this.#duty.append(
        event,
        { before: finishBefore, after: this.#finishCalled },
        { before: statusBefore, after: this.#state.status },
      );
      const pending = this.#state.pending_actions;
      if (event.type === 'action' && pending.length > waiting) this.#actions.set(event.id, event);
      else if (pending.length < waiting) this.#forgetAnswered();
    }
    this.#events += events.length;
  }

  pending(): PendingActions {
    const notStarted: ActionEvent[] = [];
    const started: ActionEvent[] = [];
    const startedBy = new Map<string, string>();
    for (const entry of this.#waiting()) {
      if (entry.pending.started_by === null) notStarted.push(entry.action);
      else {
        started.push(entry.action);
        startedBy.set(entry.action.id, entry.pending.started_by);
      }
    }
    return { notStarted, started, startedBy };
  }

  /** Is a condensation requested and not yet answered by one? */
  get condensationRequested(): boolean {
    return this.#state.condensation_requested;
  }

  /**
   * The pending delegations (`task` calls, answered by sub-agents' conversations, never by a tool
   * runner), in log order, each with the child started for it (null before subagent_started).
   */
  delegations(): { readonly action: ActionEvent; readonly child: string | null }[] {
    const delegations: { action: ActionEvent; child: string | null }[] = [];
    for (const { action, pending } of this.#waiting(true)) delegations.push({ action, child: pending.started_by });
    return delegations;
  }

  /** Runners that started a pending action. */
  startedByRunners(): ReadonlySet<string> {
    const runners = new Set<string>();
    for (const { pending } of this.#waiting()) if (pending.started_by !== null) runners.add(pending.started_by);
    return runners;
  }

  /** Is no executable action with this tool call id still waiting for its result (it was answered, or never asked)? */
  answered(toolCallId: string): boolean {
    return !this.#state.pending_actions.some((action) => action.executable && action.tool_call_id === toolCallId);
  }

  nextWork(options: NextWorkOptions = {}): NextWork {
    if (this.#state.status !== 'running') {
      const needs = this.#duty.needs(this.#state.status, false);
      return needs ? { kind: 'prepare', needs } : { kind: 'rest' };
    }
    const alive = options.runnerAlive ?? (() => false);
    const notStarted: ActionEvent[] = [];
    const interrupted: ActionEvent[] = [];
    const inProgress: ActionEvent[] = [];
    for (const { action, pending } of this.#waiting()) {
      if (pending.started_by === null) notStarted.push(action);
      else (alive(pending.started_by) ? inProgress : interrupted).push(action);
    }
    if (notStarted.length > 0 || interrupted.length > 0) return { kind: 'execute', actions: notStarted, interrupted };
    if (inProgress.length > 0) return { kind: 'in_progress', actions: inProgress };
    // a batch's task calls after its tool calls: their children start once the tools have answered
    const delegations = this.delegations();
    const toStart = delegations
      .filter((delegation) => delegation.child === null)
      .map((delegation) => delegation.action);
    if (toStart.length > 0) return { kind: 'delegate', actions: toStart };
    if (delegations.length > 0)
      return { kind: 'delegated', actions: delegations.map((delegation) => delegation.action) };
    // the tool runner's other duties (the workspace's context, hooks) come before the step that needs them
    const needs = this.#duty.needs('running', this.#finishCalled);
    if (this.#duty.finished(this.#finishCalled)) return needs ? { kind: 'prepare', needs } : { kind: 'finish' };
    if (this.#state.condensation_requested) return { kind: 'condense' };
    if (needs) return { kind: 'prepare', needs };
    return { kind: 'step' };
  }

  /** The executable pending actions in log order, each with its state: the tool runners' (by default), or the delegations. */
  *#waiting(delegations = false): Generator<{ readonly action: ActionEvent; readonly pending: PendingAction }> {
    for (const pending of this.#state.pending_actions) {
      if ((pending.tool_name === TASK_TOOL) !== delegations) continue;
      const action = pending.executable ? this.#actions.get(pending.id) : undefined;
      if (action) yield { action, pending };
    }
  }

  #forgetAnswered(): void {
    const waiting = new Set(this.#state.pending_actions.map((action) => action.id));
    for (const id of this.#actions.keys()) if (!waiting.has(id)) this.#actions.delete(id);
  }
}
