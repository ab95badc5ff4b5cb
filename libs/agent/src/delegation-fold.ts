import type {
  AgentSpecEvent,
  ConversationStatus,
  Event,
  SubagentStartedEvent,
  SubagentTaskEvent,
} from '@flotilla/events';
import { FINISH_TOOL } from './finish.js';

/** A child started for a call, with the spec in force when it was (the one its own spec is made from). */
export type StartedChild = { readonly started: SubagentStartedEvent; readonly spec: AgentSpecEvent | undefined };

/**
 * What a conversation's log says of sub-agents, folded as it grows: whose sub-agent it is (its
 * `subagent_task`), the children it started (`subagent_started`, by action), and, for its parent
 * to read, where its run stands: its status, whether a pause or an interrupt stopped it, its final
 * response since the last user message, and the last error of its run.
 */
export class DelegationFold {
  #task: SubagentTaskEvent | undefined;
  readonly #children = new Map<string, StartedChild>();
  #spec: AgentSpecEvent | undefined;
  #status: ConversationStatus = 'idle';
  #stoppedBy: 'pause' | 'interrupt' | undefined;
  #answer: string | undefined;
  #error: { readonly code: string; readonly detail: string } | undefined;

  static of(events: readonly Event[]): DelegationFold {
    return new DelegationFold().append(events);
  }

  append(events: readonly Event[]): this {
    for (const event of events) {
      switch (event.type) {
        case 'subagent_task':
          this.#task ??= event;
          break;
        case 'subagent_started':
          if (!this.#children.has(event.action_id))
            this.#children.set(event.action_id, { started: event, spec: this.#spec });
          break;
        case 'agent_spec':
          this.#spec = event;
          break;
        case 'state_change':
          if (event.status === undefined) break;
          if (event.status === 'running') {
            this.#stoppedBy = undefined;
            this.#error = undefined;
          }
          this.#status = event.status;
          break;
        case 'pause':
          this.#stoppedBy ??= 'pause';
          break;
        case 'interrupt':
          this.#stoppedBy = 'interrupt';
          break;
        case 'conversation_error':
          this.#error = { code: event.code, detail: event.detail };
          break;
        case 'message':
          if (event.role === 'assistant')
            this.#answer = event.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
          else if (event.source === 'user') this.#answer = undefined;
          break;
        case 'action':
          if (event.tool_name === FINISH_TOOL && typeof event.input?.['message'] === 'string')
            this.#answer = event.input['message'];
          break;
        default:
          break;
      }
    }
    return this;
  }

  /** This conversation's `subagent_task`: it is a sub-agent's, working on that call of its parent. */
  get task(): SubagentTaskEvent | undefined {
    return this.#task;
  }

  /** How deep below a conversation a user started this one is (0 for such a conversation). */
  get depth(): number {
    return this.#task?.depth ?? 0;
  }

  /** The conversation whose workspace this one's tools act in. */
  workspace(self: string): string {
    return this.#task?.workspace ?? self;
  }

  /** The child started for an action, if one was. */
  child(actionId: string): StartedChild | undefined {
    return this.#children.get(actionId);
  }

  /** Every child this conversation started, in the order it did. */
  children(): readonly StartedChild[] {
    return [...this.#children.values()];
  }

  get status(): ConversationStatus {
    return this.#status;
  }

  /** What stopped the run last, since it last ran: a pause (after the step) or an interrupt (at once). */
  get stoppedBy(): 'pause' | 'interrupt' | undefined {
    return this.#stoppedBy;
  }

  /** The agent's final response since the last user message: its last message's text, or its finish message. */
  get answer(): string | undefined {
    return this.#answer;
  }

  /** The last conversation_error since the run last started. */
  get error(): { readonly code: string; readonly detail: string } | undefined {
    return this.#error;
  }
}
