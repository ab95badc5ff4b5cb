import { draftEvent, type ActionEvent, type DraftContext, type Event, type EventDraft } from '@flotilla/events';

export const TEST_CONTEXT: DraftContext = {
  tenant: 'acme',
  conversation: 'c1',
  source: 'agent',
  now: () => new Date('2026-01-01T00:00:00.000Z'),
};

export type BatchOptions = {
  readonly size?: number;
  /** The first call carries signed thinking: the batch opens (or continues) an atomic tool loop. */
  readonly thinking?: boolean;
  readonly thought?: string;
  /** Text of every observation. */
  readonly output?: string;
};

/** Builds a valid, sequenced conversation log for condenser tests. */
export class TestLog {
  readonly events: Event[] = [];
  private counter = 0;

  /** Places drafts in the log (assigns seq), e.g. the drafts a condensation returned. */
  append(drafts: readonly EventDraft[]): Event[] {
    return drafts.map((draft) => {
      const event = { ...draft, seq: this.events.length + 1 } as Event;
      this.events.push(event);
      return event;
    });
  }

  private add<T extends Event['type']>(
    type: T,
    source: Event['source'],
    body: Record<string, unknown>,
  ): Extract<Event, { type: T }> {
    this.counter += 1;
    const draft = draftEvent({ ...TEST_CONTEXT, source }, type, { id: `e${this.counter}`, ...body } as never);
    return this.append([draft])[0] as Extract<Event, { type: T }>;
  }

  system(prompt = 'You are a careful software agent.') {
    return this.add('system_prompt', 'system', {
      static_prompt: prompt,
      tools: [{ name: 'terminal', description: 'Runs a shell command.', parameters: { type: 'object' } }],
    });
  }

  user(text: string) {
    return this.add('message', 'user', { role: 'user', content: [{ type: 'text', text }] });
  }

  agent(text: string) {
    return this.add('message', 'agent', {
      role: 'assistant',
      content: [{ type: 'text', text }],
      response_id: `r${this.counter + 1}`,
    });
  }

  /** One model response with `size` parallel calls, all answered in call order. */
  batch(options: BatchOptions = {}): ActionEvent[] {
    const actions = this.calls(options);
    for (const action of actions) this.observe(action, options.output);
    return actions;
  }

  /** One model response with `size` parallel calls, not answered yet. */
  calls(options: BatchOptions = {}): ActionEvent[] {
    this.counter += 1;
    const responseId = `r${this.counter}`;
    return Array.from({ length: options.size ?? 1 }, (_, call) => {
      const first = call === 0;
      return this.add('action', 'agent', {
        tool_call_id: `${responseId}-call${call}`,
        tool_name: 'terminal',
        arguments: JSON.stringify({ command: `ls step-${responseId}-${call}` }),
        input: { command: `ls step-${responseId}-${call}` },
        thought: first && options.thought !== undefined ? [{ type: 'text', text: options.thought }] : [],
        ...(first && options.thinking
          ? { reasoning: { thinking_blocks: [{ type: 'thinking', thinking: 'hmm', signature: `sig-${responseId}` }] } }
          : {}),
        response_id: responseId,
        security_risk: 'low',
      });
    });
  }

  observe(action: ActionEvent, text = `output of ${action.tool_call_id}`) {
    return this.add('observation', 'environment', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      content: [{ type: 'text', text }],
      is_error: false,
    });
  }

  error(action: ActionEvent, error = 'the command failed') {
    return this.add('agent_error', 'agent', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      error,
    });
  }

  reject(action: ActionEvent, reason = 'too risky') {
    return this.add('user_rejection', 'user', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      reason,
      rejection_source: 'user',
    });
  }

  requestCondensation() {
    return this.add('condensation_request', 'system', { reason: 'test' });
  }

  noise() {
    this.add('state_change', 'system', { status: 'running' });
  }
}
