import { draftEvent, newId, type ConversationStatus, type EventDraft, type EventOfType } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';

type ActionDraft = Extract<EventDraft, { type: 'action' }>;

/** Event drafts for one conversation, shaped as the agent, tool runner and gateway write them. */
export function draftsFor(ref: ConversationRef) {
  const user = { ...ref, source: 'user' as const };
  const agent = { ...ref, source: 'agent' as const };
  const system = { ...ref, source: 'system' as const };
  const environment = { ...ref, source: 'environment' as const };
  return {
    userMessage: (text = 'hello'): EventDraft =>
      draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text }] }),
    assistantMessage: (text = 'done'): EventDraft =>
      draftEvent(agent, 'message', { role: 'assistant', content: [{ type: 'text', text }] }),
    status: (status: ConversationStatus): EventDraft => draftEvent(system, 'state_change', { status, reason: 'test' }),
    systemPrompt: (): EventDraft =>
      draftEvent(agent, 'system_prompt', { static_prompt: 'You are a helpful agent.', tools: [] }),
    usage: (purpose: 'step' | 'condensation' = 'step'): EventDraft =>
      draftEvent(system, 'llm_usage', {
        model: 'test-model',
        purpose,
        prompt_tokens: 10,
        completion_tokens: 5,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 12,
        cost_usd: 0,
      }),
    action: (
      toolName = 'terminal',
      input: Record<string, unknown> | null = { command: 'ls' },
      toolCallId = `call_${newId()}`,
    ): ActionDraft =>
      draftEvent(agent, 'action', {
        tool_call_id: toolCallId,
        tool_name: toolName,
        arguments: JSON.stringify(input ?? {}),
        input,
        thought: [],
        response_id: 'resp_1',
        security_risk: 'low',
      }),
    started: (...actions: readonly ActionDraft[]): EventDraft =>
      draftEvent(system, 'execution_started', { action_ids: actions.map((action) => action.id), runner: 'runner-1' }),
    observation: (action: ActionDraft, overrides: { tool_call_id?: string; action_id?: string } = {}): EventDraft =>
      draftEvent(environment, 'observation', {
        action_id: overrides.action_id ?? action.id,
        tool_call_id: overrides.tool_call_id ?? action.tool_call_id,
        tool_name: action.tool_name,
        content: [{ type: 'text', text: 'ok' }],
        is_error: false,
      }),
    agentError: (action: ActionDraft): EventDraft =>
      draftEvent(environment, 'agent_error', {
        tool_call_id: action.tool_call_id,
        tool_name: action.tool_name,
        action_id: action.id,
        error: 'bad call',
      }),
    rejection: (action: ActionDraft): EventDraft =>
      draftEvent(user, 'user_rejection', {
        action_id: action.id,
        tool_call_id: action.tool_call_id,
        tool_name: action.tool_name,
        reason: 'no',
        rejection_source: 'user',
      }),
    approval: (...actions: readonly ActionDraft[]): EventDraft =>
      draftEvent(user, 'approval', { action_ids: actions.map((action) => action.id) }),
    pause: (): EventDraft => draftEvent(user, 'pause', {}),
    condensationRequest: (): EventDraft => draftEvent(system, 'condensation_request', { reason: 'too long' }),
    condensation: (forgotten: readonly string[]): EventDraft =>
      draftEvent(agent, 'condensation', { forgotten_event_ids: [...forgotten] }),
  };
}

export type Drafts = ReturnType<typeof draftsFor>;
export type { ActionDraft, EventOfType };

/**
 * A clean conversation touching every rule: a run, a step with parallel actions, their
 * execution, an unparseable call answered at once, a condensation, a confirmation round, a
 * final answer, and a new user message reopening the finished conversation.
 */
export function cleanConversation(d: Drafts): EventDraft[][] {
  const list = d.action('terminal', { command: 'ls' });
  const read = d.action('file_editor', { command: 'view', path: '/a' });
  const broken = d.action('nope', null);
  const risky = d.action('terminal', { command: 'rm -rf build' });
  return [
    [d.userMessage('list the files'), d.status('running')],
    [d.systemPrompt(), d.usage(), list, read],
    [d.started(list, read)],
    [d.observation(list), d.observation(read)],
    [d.usage(), broken, d.agentError(broken)],
    [d.condensationRequest()],
    [d.condensation([list.id]), d.usage('condensation')],
    [d.usage(), risky, d.status('waiting_for_confirmation')],
    [d.approval(risky), d.status('running')],
    [d.started(risky)],
    [d.observation(risky)],
    [d.usage(), d.assistantMessage('all done'), d.status('finished')],
    [d.userMessage('thanks'), d.status('idle')],
  ];
}
