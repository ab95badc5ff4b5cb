import type { AgentSpecEvent, Event } from '@flotilla/events';

/**
 * The agent spec in force at a point of a conversation's log: its last `agent_spec` event (none
 * in a conversation created before specs were logged). Kept in a view checkpoint, so a reader of
 * one knows the spec without the events before it.
 */
export class SpecFold {
  #event: AgentSpecEvent | undefined;

  constructor(event?: AgentSpecEvent) {
    this.#event = event;
  }

  static resume(event: AgentSpecEvent | undefined): SpecFold {
    return new SpecFold(event);
  }

  append(events: readonly Event[]): this {
    for (let index = events.length - 1; index >= 0; index -= 1) {
      const event = events[index]!;
      if (event.type === 'agent_spec') {
        this.#event = event;
        break;
      }
    }
    return this;
  }

  /** The spec's event, if the log has one. */
  event(): AgentSpecEvent | undefined {
    return this.#event;
  }
}

/** The spec in force at the end of `events`: its last agent_spec event. */
export function lastSpecEvent(events: readonly Event[]): AgentSpecEvent | undefined {
  return new SpecFold().append(events).event();
}
