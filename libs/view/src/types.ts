import type {
  ActionEvent,
  AgentErrorEvent,
  MessageEvent,
  ObservationEvent,
  SystemPromptEvent,
  UserRejectionEvent,
} from '@flotilla/events';

/** An event that answers one tool call. An agent_error answers a call only when it names one. */
export type ResultEvent = ObservationEvent | AgentErrorEvent | UserRejectionEvent;

/** The events the LLM can read. Every other event type steers the runtime and never enters a view. */
export type LlmEvent =
  SystemPromptEvent | MessageEvent | ActionEvent | ObservationEvent | AgentErrorEvent | UserRejectionEvent;

/**
 * A condensation's summary as it sits in a view; rendered as a user message. Its `id` is the
 * condensation event's id, so a later condensation can forget it (rolling summaries).
 */
export type CondensationSummary = {
  readonly type: 'condensation_summary';
  readonly id: string;
  readonly summary: string;
};

export type ViewItem = LlmEvent | CondensationSummary;

/**
 * What the LLM sees of a conversation: condensations applied, then the invariants enforced
 * (see README.md). `items[0]` is the system prompt when the log has one.
 */
export type View = {
  readonly items: readonly ViewItem[];
  /** A condensation_request came after the last condensation: the condenser still owes one. */
  readonly unhandledCondensationRequest: boolean;
};

const LLM_EVENT_TYPES: ReadonlySet<string> = new Set([
  'system_prompt',
  'message',
  'action',
  'observation',
  'agent_error',
  'user_rejection',
]);

export function isLlmEvent(event: { readonly type: string }): event is LlmEvent {
  return LLM_EVENT_TYPES.has(event.type);
}

/** True for an event that answers a tool call (as opposed to a free-standing agent_error). */
export function isResultEvent(item: ViewItem): item is ResultEvent {
  if (item.type === 'observation' || item.type === 'user_rejection') return true;
  return item.type === 'agent_error' && (item.action_id !== undefined || item.tool_call_id !== undefined);
}

/** True for the items that make up a tool-call block: actions and their results. */
export function isToolItem(item: ViewItem): item is ActionEvent | ResultEvent {
  return item.type === 'action' || isResultEvent(item);
}

export function hasThinking(action: ActionEvent): boolean {
  return (action.reasoning?.thinking_blocks?.length ?? 0) > 0;
}
