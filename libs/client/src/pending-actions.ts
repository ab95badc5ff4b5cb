import type { ActionEvent, Event } from '@flotilla/events';

/**
 * The actions that await the user's decision, kept up to date one event at a time: executable
 * actions no observation, error or rejection has answered and no runner has started (the same
 * rule the agent applies when it approves or rejects). The CLI and the web UI both fold with it.
 */
export class PendingActions {
  readonly #actions = new Map<string, ActionEvent>();
  readonly #answered = new Set<string>();
  readonly #started = new Set<string>();

  add(event: Event): void {
    switch (event.type) {
      case 'action':
        if (event.input !== null) this.#actions.set(event.tool_call_id, event);
        return;
      case 'observation':
      case 'user_rejection':
        this.#answered.add(event.tool_call_id);
        return;
      case 'agent_error':
        if (event.tool_call_id !== undefined) this.#answered.add(event.tool_call_id);
        return;
      case 'execution_started':
        for (const id of event.action_ids) this.#started.add(id);
        return;
      default:
        return;
    }
  }

  /** Actions without an answer that no runner has started, in log order. */
  list(): ActionEvent[] {
    return [...this.#actions.values()].filter(
      (action) => !this.#answered.has(action.tool_call_id) && !this.#started.has(action.id),
    );
  }

  /** Whether this action still waits (for marking it in the stream). */
  isPending(action: ActionEvent): boolean {
    return !this.#answered.has(action.tool_call_id) && !this.#started.has(action.id);
  }
}
