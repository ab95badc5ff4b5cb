import { draftEvent, type EventDraft } from '@flotilla/events';
import { EMPTY_TAIL, type ConversationRef, type EventLog, type Tail } from '@flotilla/log';

/**
 * Writes a realistic conversation of about `events` events: a system prompt and a user message,
 * then steps of one action commit (usage + action), one execution start and one observation
 * commit (~600 characters of output), as the runtime writes them.
 */
export async function writeConversation(log: EventLog, ref: ConversationRef, events: number): Promise<Tail> {
  let tail: Tail = EMPTY_TAIL;
  for (const drafts of conversationCommits(ref, events)) {
    const commit = await log.append(ref, drafts, { expected: tail });
    tail = { streamSeq: commit.streamSeq, lastSeq: commit.lastSeq };
  }
  return tail;
}

/** The commits (drafts of each) of the conversation `writeConversation` writes. */
export function* conversationCommits(ref: ConversationRef, events: number): Generator<EventDraft[]> {
  let written = 0;
  const commit = (drafts: EventDraft[]): EventDraft[] => {
    written += drafts.length;
    return drafts;
  };
  const agent = { ...ref, source: 'agent' as const };
  const system = { ...ref, source: 'system' as const };
  yield commit([
    draftEvent({ ...ref, source: 'user' }, 'message', {
      role: 'user',
      content: [{ type: 'text', text: 'Fix the failing tests in the repository.' }],
    }),
    draftEvent(system, 'state_change', { status: 'running' }),
    draftEvent(agent, 'system_prompt', {
      static_prompt: 'You are a software engineering agent. '.repeat(100),
      tools: [
        {
          name: 'terminal',
          description: 'Run a command',
          parameters: { type: 'object', properties: { command: { type: 'string' } } },
        },
      ],
    }),
  ]);
  for (let step = 0; written < events; step += 1) {
    const action = draftEvent(agent, 'action', {
      tool_call_id: `call_${step}`,
      tool_name: 'terminal',
      arguments: JSON.stringify({ command: `pytest tests/test_${step}.py -q` }),
      input: { command: `pytest tests/test_${step}.py -q` },
      thought: [{ type: 'text', text: `Step ${step}: run the next test file and read its failures.` }],
      response_id: `resp_${step}`,
      security_risk: 'low',
    });
    yield commit([
      draftEvent(system, 'llm_usage', {
        model: 'm',
        purpose: 'step',
        prompt_tokens: 1000 + step,
        completion_tokens: 50,
        cache_read_tokens: 900,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 800,
        cost_usd: 0.001,
      }),
      action,
    ]);
    // the tool runner records an execution's start in a commit of its own, before it runs it
    yield commit([draftEvent(system, 'execution_started', { action_ids: [action.id], runner: 'runner-1' })]);
    yield commit([
      draftEvent({ ...ref, source: 'environment' }, 'observation', {
        action_id: action.id,
        tool_call_id: `call_${step}`,
        tool_name: 'terminal',
        content: [{ type: 'text', text: `collected 12 items\n${'tests/test_x.py::test_case PASSED\n'.repeat(16)}` }],
        is_error: false,
        details: { exit_code: 0, cwd: '/workspace' },
      }),
    ]);
  }
}
