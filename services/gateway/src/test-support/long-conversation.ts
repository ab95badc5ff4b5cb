import { draftEvent, withPositionalIds, type EventDraft } from '@flotilla/events';
import { EMPTY_TAIL, tailOf, type ConversationRef, type EventLog, type Tail } from '@flotilla/log';

export type LongConversation = {
  readonly tail: Tail;
  /** Ids of a few events spread over the history (first, middle, last commit), by type. */
  readonly sample: readonly { readonly id: string; readonly seq: number; readonly type: string }[];
};

export type LongConversationOptions = {
  /** End with actions awaiting confirmation (status waiting_for_confirmation) instead of a finished run. */
  readonly waiting?: boolean;
  /** Events per commit (at most 1024; default 800): a long history written in few appends. */
  readonly perCommit?: number;
};

/**
 * Writes a valid conversation of about `events` events straight to the log, in large commits (as
 * if a long history had been appended over time): a user message and a run, then steps of an
 * action and its observation (started by a runner, with the model's usage), a user message and
 * an agent message now and then, and at the end a finished run, or an action waiting for
 * confirmation. Ids are positional, as the services write them.
 */
export async function writeLongConversation(
  log: EventLog,
  ref: ConversationRef,
  events: number,
  options: LongConversationOptions = {},
): Promise<LongConversation> {
  const perCommit = Math.min(1024, options.perCommit ?? 800);
  const user = { ...ref, source: 'user' as const };
  const agent = { ...ref, source: 'agent' as const };
  const system = { ...ref, source: 'system' as const };
  const environment = { ...ref, source: 'environment' as const };
  let tail: Tail = EMPTY_TAIL;
  const sample: { id: string; seq: number; type: string }[] = [];
  const append = async (drafts: EventDraft[]): Promise<void> => {
    const commit = await log.append(ref, withPositionalIds(drafts, tail.lastSeq + 1), { expected: tail });
    tail = tailOf(commit);
    for (const event of [commit.events[0]!, commit.events.at(-1)!])
      if (!sample.some((known) => known.id === event.id))
        sample.push({ id: event.id, seq: event.seq, type: event.type });
  };
  await append([
    draftEvent(system, 'state_change', { status: 'idle', reason: 'conversation created' }),
    draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text: 'Fix the failing tests.' }] }),
    draftEvent(system, 'state_change', { status: 'running', reason: 'message with run' }),
  ]);
  const end = options.waiting ? 3 : 2;
  let step = 0;
  let batch: EventDraft[] = [];
  while (tail.lastSeq + batch.length + end < events) {
    if (step % 50 === 49 && batch.length + 2 <= perCommit && events - end - tail.lastSeq - batch.length >= 6) {
      batch.push(
        draftEvent(agent, 'message', {
          role: 'assistant',
          content: [{ type: 'text', text: `Progress after ${step} steps.` }],
        }),
      );
      batch.push(draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text: 'Keep going.' }] }));
    }
    const action = draftEvent(agent, 'action', {
      tool_call_id: `call_${step}`,
      tool_name: 'terminal',
      arguments: JSON.stringify({ command: `pytest tests/test_${step}.py -q` }),
      input: { command: `pytest tests/test_${step}.py -q` },
      thought: [],
      response_id: `resp_${step}`,
      security_risk: 'low',
    });
    const left = events - end - tail.lastSeq - batch.length;
    const steps: EventDraft[] = [
      draftEvent(system, 'llm_usage', {
        model: 'm',
        purpose: 'step',
        prompt_tokens: 1000,
        completion_tokens: 50,
        cache_read_tokens: 900,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 800,
        cost_usd: 0.001,
      }),
      action,
      draftEvent(system, 'execution_started', { action_ids: [action.id], runner: 'runner-1' }),
      draftEvent({ ...environment, parent: action.id }, 'observation', {
        action_id: action.id,
        tool_call_id: action.tool_call_id,
        tool_name: 'terminal',
        content: [{ type: 'text', text: `collected 12 items, 12 passed (step ${step})` }],
        is_error: false,
      }),
    ];
    // a step's events stay in one commit (its references are among its drafts); the tail is filled with messages
    if (left < steps.length)
      steps.splice(
        0,
        steps.length,
        ...Array.from({ length: left }, () =>
          draftEvent(user, 'message', { role: 'user', content: [{ type: 'text', text: 'And?' }] }),
        ),
      );
    if (batch.length + steps.length > perCommit) {
      await append(batch);
      batch = [];
    }
    batch.push(...steps);
    step += 1;
  }
  if (batch.length > 0) await append(batch);
  if (options.waiting) await append(awaitingConfirmation(ref, `final_${step}`));
  else {
    await append([
      draftEvent(agent, 'message', { role: 'assistant', content: [{ type: 'text', text: 'All tests pass.' }] }),
      draftEvent(system, 'state_change', { status: 'finished', reason: 'the agent replied without calling a tool' }),
    ]);
  }
  return { tail, sample };
}

/** A step's commit that waits for the user's confirmation: its usage, one risky action, the status. */
export function awaitingConfirmation(ref: ConversationRef, callId: string): EventDraft[] {
  return [
    draftEvent({ ...ref, source: 'system' }, 'llm_usage', {
      model: 'm',
      purpose: 'step',
      prompt_tokens: 1000,
      completion_tokens: 50,
      cache_read_tokens: 900,
      cache_write_tokens: 0,
      reasoning_tokens: 0,
      latency_ms: 800,
      cost_usd: 0.001,
    }),
    draftEvent({ ...ref, source: 'agent' }, 'action', {
      tool_call_id: callId,
      tool_name: 'terminal',
      arguments: JSON.stringify({ command: 'rm -rf build' }),
      input: { command: 'rm -rf build' },
      thought: [],
      response_id: `resp_${callId}`,
      security_risk: 'high',
    }),
    draftEvent({ ...ref, source: 'system' }, 'state_change', {
      status: 'waiting_for_confirmation',
      reason: 'actions need confirmation',
    }),
  ];
}
