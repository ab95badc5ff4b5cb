import type { AgentSpecEvent, Event, McpToolsEvent } from '@flotilla/events';

/**
 * The agent spec in force at a point of a conversation's log: its last `agent_spec` event (none
 * in a conversation created before specs were logged), and what its MCP servers listed since
 * (`mcp_tools` events for that spec, the last one of each server). Kept in a view checkpoint, so
 * a reader of one knows the spec and its MCP tools without the events before it.
 */
export class SpecFold {
  #event: AgentSpecEvent | undefined;
  #listed: readonly McpToolsEvent[];

  constructor(event?: AgentSpecEvent, listed: readonly McpToolsEvent[] = []) {
    this.#event = event;
    this.#listed = listed;
  }

  static resume(event: AgentSpecEvent | undefined, listed?: readonly McpToolsEvent[]): SpecFold {
    return new SpecFold(event, listed);
  }

  append(events: readonly Event[]): this {
    for (const event of events) {
      if (event.type === 'agent_spec') {
        this.#event = event;
        this.#listed = [];
      } else if (event.type === 'mcp_tools' && event.spec_seq === this.#event?.seq) {
        this.#listed = [...this.#listed.filter((listing) => listing.server !== event.server), event];
      }
    }
    return this;
  }

  /** The spec's event, if the log has one. */
  event(): AgentSpecEvent | undefined {
    return this.#event;
  }

  /** What the spec's MCP servers listed so far, one event per server (the same array until the next listing). */
  listed(): readonly McpToolsEvent[] {
    return this.#listed;
  }
}

/** The spec in force at the end of `events`: its last agent_spec event. */
export function lastSpecEvent(events: readonly Event[]): AgentSpecEvent | undefined {
  return new SpecFold().append(events).event();
}
