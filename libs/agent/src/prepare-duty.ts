import type { ConversationStatus, Event } from '@flotilla/events';
import { hookPointsIn, type HookPoint } from './hooks-config.js';
import { skillsEnabledIn } from './skills-config.js';

/**
 * What the workspace's tool runner owes a conversation besides running its actions, all answered
 * by the tool runner in one commit (`nextWork` says `prepare`): the workspace's context (before
 * the first step of a spec with skills on), the SessionStart hooks (once, before the first step),
 * the UserPromptSubmit hooks of each new user message (before the step that answers it), the Stop
 * hooks of the agent's finish (at most one refusal per run), and the SessionEnd hooks (once a run
 * finished).
 */
export type PrepareNeeds = {
  readonly context: boolean;
  readonly sessionStart: boolean;
  /** The user messages (their event ids, oldest first) whose UserPromptSubmit hooks have not run. */
  readonly prompts: readonly string[];
  readonly stop: boolean;
  readonly sessionEnd: boolean;
};

/** A `PrepareDuty` as data, for a view checkpoint. */
export type PrepareCheckpoint = {
  readonly context_wanted: boolean;
  readonly context_read: boolean;
  readonly hook_points: readonly string[];
  readonly session_started: boolean;
  readonly prompts: readonly string[];
  readonly replied: boolean;
  readonly stop_answered: boolean;
  readonly stop_refused: boolean;
  readonly session_end_owed: boolean;
};

/**
 * Folds what `PrepareNeeds` asks from the log, event by event: the spec in force (its skills and
 * its hook points), the workspace contexts and `hook_execution` events logged. A hook's run
 * answers what it was run for: a UserPromptSubmit run names its message as `parent`.
 */
export class PrepareDuty {
  #contextWanted = false;
  #contextRead = false;
  #points: ReadonlySet<HookPoint> = new Set();
  #sessionStarted = false;
  #prompts: string[] = [];
  /** The agent's last reply was text with no tool call, and nothing came after it (a finish, when Stop hooks hold the run open). */
  #replied = false;
  #stopAnswered = false;
  #stopRefused = false;
  #sessionEndOwed = false;

  static resume(checkpoint: PrepareCheckpoint): PrepareDuty {
    const duty = new PrepareDuty();
    duty.#contextWanted = checkpoint.context_wanted;
    duty.#contextRead = checkpoint.context_read;
    duty.#points = new Set(checkpoint.hook_points as HookPoint[]);
    duty.#sessionStarted = checkpoint.session_started;
    duty.#prompts = [...checkpoint.prompts];
    duty.#replied = checkpoint.replied;
    duty.#stopAnswered = checkpoint.stop_answered;
    duty.#stopRefused = checkpoint.stop_refused;
    duty.#sessionEndOwed = checkpoint.session_end_owed;
    return duty;
  }

  checkpoint(): PrepareCheckpoint {
    return {
      context_wanted: this.#contextWanted,
      context_read: this.#contextRead,
      hook_points: [...this.#points],
      session_started: this.#sessionStarted,
      prompts: [...this.#prompts],
      replied: this.#replied,
      stop_answered: this.#stopAnswered,
      stop_refused: this.#stopRefused,
      session_end_owed: this.#sessionEndOwed,
    };
  }

  /**
   * Folds one event. `finishing` says whether the agent's finish came back before and after it
   * (the progress's `finishCalledAfter`), `status` the status before and after it.
   */
  append(
    event: Event,
    finishing: { readonly before: boolean; readonly after: boolean },
    status: { readonly before: ConversationStatus; readonly after: ConversationStatus },
  ): void {
    const endedBefore = finishing.before || this.#replied;
    switch (event.type) {
      case 'agent_spec':
        this.#contextWanted = skillsEnabledIn(event.spec);
        this.#points = hookPointsIn(event.spec);
        break;
      case 'workspace_context':
        this.#contextRead = true;
        break;
      case 'message':
        if (event.source === 'user' && event.role === 'user' && this.#points.has('userPromptSubmit'))
          this.#prompts.push(event.id);
        this.#replied = event.source === 'agent' && event.role === 'assistant';
        break;
      case 'hook_execution':
        if (event.hook === 'session_start') this.#sessionStarted = true;
        else if (event.hook === 'user_prompt_submit' && event.parent !== undefined)
          this.#prompts = this.#prompts.filter((id) => id !== event.parent);
        else if (event.hook === 'stop') {
          this.#stopAnswered = true;
          if (event.decision === 'deny') this.#stopRefused = true;
        } else if (event.hook === 'session_end') this.#sessionEndOwed = false;
        break;
      case 'state_change':
        if (event.status !== undefined) this.#replied = false;
        if (event.status === 'running') {
          this.#stopRefused = false;
          this.#sessionEndOwed = false;
        } else if (event.status === 'finished' && status.before === 'running' && this.#points.has('sessionEnd'))
          this.#sessionEndOwed = true;
        break;
      case 'action':
      case 'observation':
      case 'agent_error':
      case 'user_rejection':
        this.#replied = false;
        break;
      default:
        break;
    }
    // a new finish is checked by the Stop hooks again
    if (!endedBefore && (finishing.after || this.#replied)) this.#stopAnswered = false;
    void status.after;
  }

  /** Whether the agent ended its turn: a successful finish call (`finishCalled`), or a text reply held open for the Stop hooks. */
  finished(finishCalled: boolean): boolean {
    return finishCalled || (this.#replied && this.#points.has('stop'));
  }

  /** What the tool runner owes now, or undefined: nothing. `finishCalled` and `status` as the progress folds them. */
  needs(status: ConversationStatus, finishCalled: boolean): PrepareNeeds | undefined {
    const none: PrepareNeeds = { context: false, sessionStart: false, prompts: [], stop: false, sessionEnd: false };
    if (status !== 'running') return this.#sessionEndOwed ? { ...none, sessionEnd: true } : undefined;
    if (this.finished(finishCalled)) {
      const stop = this.#points.has('stop') && !this.#stopAnswered && !this.#stopRefused;
      return stop ? { ...none, stop: true } : undefined;
    }
    const needs: PrepareNeeds = {
      ...none,
      context: this.#contextWanted && !this.#contextRead,
      sessionStart: this.#points.has('sessionStart') && !this.#sessionStarted,
      prompts: [...this.#prompts],
    };
    return needs.context || needs.sessionStart || needs.prompts.length > 0 ? needs : undefined;
  }
}
