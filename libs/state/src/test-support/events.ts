import { draftEvent, type ConversationStatus, type EventDraft } from '@flotilla/events';
import { placeEvents, type ConversationRef, type StoredCommit } from '@flotilla/log';

/** Builds event drafts for one conversation with a deterministic clock (one second per event). */
export class EventFactory {
  #tick = 0;
  constructor(
    readonly ref: ConversationRef,
    readonly start = Date.parse('2026-01-01T00:00:00.000Z'),
  ) {}

  #context(source: 'user' | 'agent' | 'environment' | 'system') {
    const at = new Date(this.start + 1_000 * this.#tick++);
    return { ...this.ref, source, now: () => at };
  }

  userMessage(text = 'hello'): EventDraft {
    return draftEvent(this.#context('user'), 'message', { role: 'user', content: [{ type: 'text', text }] });
  }

  environmentMessage(text = 'keep going'): EventDraft {
    return draftEvent(this.#context('environment'), 'message', { role: 'user', content: [{ type: 'text', text }] });
  }

  agentMessage(text = 'done'): EventDraft {
    return draftEvent(this.#context('agent'), 'message', { role: 'assistant', content: [{ type: 'text', text }] });
  }

  action(
    toolCallId = 'call_1',
    toolName = 'terminal',
    input: Record<string, unknown> | null = { command: 'ls' },
  ): EventDraft & { type: 'action' } {
    return draftEvent(this.#context('agent'), 'action', {
      tool_call_id: toolCallId,
      tool_name: toolName,
      arguments: JSON.stringify(input ?? {}),
      input,
      thought: [],
      response_id: 'resp_1',
      security_risk: 'low',
    });
  }

  executionStarted(runner: string, ...actions: readonly (EventDraft & { type: 'action' })[]): EventDraft {
    return draftEvent(this.#context('system'), 'execution_started', {
      action_ids: actions.map((action) => action.id),
      runner,
    });
  }

  observation(action: EventDraft & { type: 'action' }, isError = false): EventDraft {
    return draftEvent(this.#context('environment'), 'observation', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      content: [{ type: 'text', text: 'README.md' }],
      is_error: isError,
    });
  }

  toolError(action: EventDraft & { type: 'action' }, error = 'tool failed'): EventDraft {
    return draftEvent(this.#context('environment'), 'agent_error', {
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      action_id: action.id,
      error,
    });
  }

  rejection(action: EventDraft & { type: 'action' }, reason = 'no'): EventDraft {
    return draftEvent(this.#context('user'), 'user_rejection', {
      action_id: action.id,
      tool_call_id: action.tool_call_id,
      tool_name: action.tool_name,
      reason,
      rejection_source: 'user',
    });
  }

  stateChange(change: {
    status?: ConversationStatus;
    title?: string;
    tags?: string[];
    settings_ref?: string;
  }): EventDraft {
    return draftEvent(this.#context('system'), 'state_change', change);
  }

  conversationError(code = 'max_iterations', detail = 'stopped after 100 steps'): EventDraft {
    return draftEvent(this.#context('system'), 'conversation_error', { code, detail });
  }

  llmUsage(
    tokens: {
      prompt?: number;
      completion?: number;
      cacheRead?: number;
      cacheWrite?: number;
      reasoning?: number;
      cost?: number;
    } = {},
  ): EventDraft {
    return draftEvent(this.#context('system'), 'llm_usage', {
      model: 'test-model',
      purpose: 'step',
      prompt_tokens: tokens.prompt ?? 100,
      completion_tokens: tokens.completion ?? 20,
      cache_read_tokens: tokens.cacheRead ?? 0,
      cache_write_tokens: tokens.cacheWrite ?? 0,
      reasoning_tokens: tokens.reasoning ?? 0,
      latency_ms: 12,
      cost_usd: tokens.cost ?? 0.01,
    });
  }

  condensation(forgotten: readonly string[] = []): EventDraft {
    return draftEvent(this.#context('system'), 'condensation', {
      forgotten_event_ids: [...forgotten],
      summary: 'so far',
      summary_offset: 0,
    });
  }

  condensationRequest(): EventDraft {
    return draftEvent(this.#context('system'), 'condensation_request', { reason: 'context too long' });
  }

  pause(): EventDraft {
    return draftEvent(this.#context('user'), 'pause', {});
  }

  secretChanged(name = 'API_TOKEN', action: 'set' | 'removed' = 'set'): EventDraft {
    return draftEvent(this.#context('user'), 'secret_changed', { name, action });
  }
}

/**
 * Places groups of drafts as consecutive commits, as the log would (contiguous seqs), with
 * stream sequences starting at `firstStreamSeq` and spaced by `streamStride` (other
 * conversations' commits interleave in a real stream).
 */
export function commitsOf(
  ref: ConversationRef,
  groups: readonly (readonly EventDraft[])[],
  firstStreamSeq = 1,
  streamStride = 3,
): StoredCommit[] {
  let lastSeq = 0;
  return groups.map((drafts, index) => {
    const events = placeEvents(ref, drafts, lastSeq);
    lastSeq += events.length;
    return {
      streamSeq: firstStreamSeq + index * streamStride,
      id: `commit-${index}`,
      tenant: ref.tenant,
      conversation: ref.conversation,
      firstSeq: events[0]!.seq,
      lastSeq: events[events.length - 1]!.seq,
      events,
    };
  });
}
