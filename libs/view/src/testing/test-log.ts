import type { ActionEvent, Event, EventDraft } from '@flotilla/events';

type Body<T extends Event['type']> = Omit<
  Extract<EventDraft, { type: T }>,
  'v' | 'id' | 'type' | 'tenant' | 'conversation' | 'source' | 'timestamp'
>;

export type BatchOptions = {
  readonly size?: number;
  readonly thinking?: boolean;
  /** Text the model wrote alongside its calls (rides on the first action). */
  readonly thought?: string;
  /** Actions whose input could not be understood (input: null). */
  readonly invalid?: readonly number[];
};

/** Builds a valid, sequenced conversation log for tests, one helper per event type. */
export class TestLog {
  readonly events: Event[] = [];
  private counter = 0;

  private push<T extends Event['type']>(type: T, source: Event['source'], body: Body<T>): Extract<Event, { type: T }> {
    this.counter += 1;
    const event = {
      v: 1,
      id: `e${this.counter}`,
      seq: this.events.length + 1,
      tenant: 'acme',
      conversation: 'c1',
      source,
      timestamp: '2026-01-01T00:00:00.000Z',
      type,
      ...body,
    } as unknown as Extract<Event, { type: T }>;
    this.events.push(event);
    return event;
  }

  system(staticPrompt = 'You are a careful agent.', dynamicPrompt?: string) {
    return this.push('system_prompt', 'system', {
      static_prompt: staticPrompt,
      ...(dynamicPrompt === undefined ? {} : { dynamic_prompt: dynamicPrompt }),
      tools: [],
    });
  }

  user(text: string) {
    return this.push('message', 'user', { role: 'user', content: [{ type: 'text', text }] });
  }

  agent(text: string) {
    this.counter += 1;
    return this.push('message', 'agent', {
      role: 'assistant',
      content: [{ type: 'text', text }],
      response_id: `r${this.counter}`,
    });
  }

  /** One LLM response with `size` parallel tool calls. */
  batch(options: BatchOptions = {}): ActionEvent[] {
    this.counter += 1;
    const responseId = `r${this.counter}`;
    const actions: ActionEvent[] = [];
    for (let call = 0; call < (options.size ?? 1); call += 1) {
      const first = call === 0;
      const thinking = first && options.thinking === true;
      actions.push(
        this.push('action', 'agent', {
          tool_call_id: `${responseId}-call${call}`,
          tool_name: 'terminal',
          arguments: `{"command":"echo ${call}"}`,
          input: options.invalid?.includes(call) ? null : { command: `echo ${call}` },
          thought: first && options.thought !== undefined ? [{ type: 'text', text: options.thought }] : [],
          ...(thinking
            ? {
                reasoning: { thinking_blocks: [{ type: 'thinking', thinking: 'hmm', signature: `sig-${responseId}` }] },
              }
            : {}),
          response_id: responseId,
          security_risk: 'low',
        }),
      );
    }
    return actions;
  }

  observe(action: ActionEvent, text = `output of ${action.tool_call_id}`, isError = false) {
    return this.push('observation', 'environment', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      content: [{ type: 'text', text }],
      is_error: isError,
    });
  }

  error(action: ActionEvent | undefined, error = 'something went wrong') {
    const call =
      action === undefined
        ? {}
        : { action_id: action.id, tool_call_id: action.tool_call_id, tool_name: action.tool_name };
    return this.push('agent_error', 'agent', { ...call, error });
  }

  reject(action: ActionEvent, reason = 'not allowed', source: 'user' | 'hook' = 'user') {
    return this.push('user_rejection', 'user', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      reason,
      rejection_source: source,
    });
  }

  condense(forgotten: readonly string[], summary?: string, offset?: number) {
    return this.push('condensation', 'system', {
      forgotten_event_ids: [...forgotten],
      ...(summary === undefined ? {} : { summary, summary_offset: offset ?? 0 }),
    });
  }

  requestCondensation() {
    return this.push('condensation_request', 'system', {});
  }

  /** A few control events that must never reach the LLM. */
  noise(actionIds: readonly string[] = []) {
    this.push('state_change', 'system', { status: 'running' });
    this.push('llm_usage', 'system', {
      model: 'test-model',
      purpose: 'step',
      prompt_tokens: 1,
      completion_tokens: 1,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: 1,
      cost_usd: 0,
    });
    if (actionIds.length > 0) {
      this.push('approval', 'user', { action_ids: [...actionIds] });
      this.push('execution_started', 'system', { action_ids: [...actionIds], runner: 'runner-1' });
    }
    this.push('pause', 'user', {});
  }

  /** A secret of the conversation set or removed (a protocol v2 event). */
  secretChanged(name: string, action: 'set' | 'removed' = 'set') {
    const event = this.push('secret_changed', 'user', { name, action });
    (event as { v: number }).v = 2;
    return event;
  }
}
