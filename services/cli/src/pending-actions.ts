import type { ActionEvent, Event } from '@flotilla/events';

/**
 * The actions that have neither a result (observation, error, rejection) nor an approval yet,
 * folded from events in log order: at `waiting_for_confirmation`, the ones awaiting the user.
 */
export class PendingActions {
  readonly #open = new Map<string, ActionEvent>();

  observe(event: Event): void {
    switch (event.type) {
      case 'action':
        this.#open.set(event.id, event);
        return;
      case 'observation':
      case 'user_rejection':
        this.#open.delete(event.action_id);
        return;
      case 'agent_error':
        if (event.action_id !== undefined) this.#open.delete(event.action_id);
        return;
      case 'approval':
        for (const id of event.action_ids) this.#open.delete(id);
        return;
      default:
        return;
    }
  }

  list(): ActionEvent[] {
    return [...this.#open.values()];
  }
}
