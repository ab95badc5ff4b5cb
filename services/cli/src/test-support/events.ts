import { parseEvent, protocolVersionOf, type Event, type EventDraft, type EventSource } from '@flotilla/events';

type Body<T extends Event['type']> = Omit<
  Extract<EventDraft, { type: T }>,
  'v' | 'id' | 'tenant' | 'conversation' | 'source' | 'timestamp' | 'type' | 'parent'
>;

/** A valid event for tests: the envelope filled in, the body as given (validated by the real schema). */
export function testEvent<T extends Event['type']>(
  type: T,
  seq: number,
  body: Body<T>,
  source: EventSource = 'agent',
): Extract<Event, { type: T }> {
  return parseEvent({
    v: protocolVersionOf(type),
    id: `ev-${seq}`,
    seq,
    tenant: 'acme',
    conversation: 'c1',
    source,
    timestamp: '2026-11-29T21:04:05.123Z',
    type,
    ...body,
  }) as Extract<Event, { type: T }>;
}

export function terminalAction(seq: number, command: string, thought = ''): Extract<Event, { type: 'action' }> {
  return testEvent('action', seq, {
    tool_call_id: `call-${seq}`,
    tool_name: 'terminal',
    arguments: JSON.stringify({ command, security_risk: 'low' }),
    input: { command, security_risk: 'low' },
    thought: thought === '' ? [] : [{ type: 'text', text: thought }],
    response_id: `resp-${seq}`,
    security_risk: 'low',
  });
}

export function terminalResult(
  seq: number,
  actionSeq: number,
  output: string,
  exitCode: number,
): Extract<Event, { type: 'observation' }> {
  return testEvent(
    'observation',
    seq,
    {
      action_id: `ev-${actionSeq}`,
      tool_call_id: `call-${actionSeq}`,
      tool_name: 'terminal',
      content: [
        {
          type: 'text',
          text: `${output}\n[The command completed with exit code ${exitCode}.]\n[Current working directory: /workspace]`,
        },
      ],
      is_error: exitCode !== 0,
      details: { exit_code: exitCode, cwd: '/workspace', still_running: false, timed_out: false },
    },
    'environment',
  );
}

export function statusChange(
  seq: number,
  status: Extract<Event, { type: 'state_change' }>['status'],
  reason?: string,
): Extract<Event, { type: 'state_change' }> {
  return testEvent('state_change', seq, { status, ...(reason === undefined ? {} : { reason }) }, 'system');
}

export function message(
  seq: number,
  text: string,
  source: 'user' | 'agent' = 'agent',
): Extract<Event, { type: 'message' }> {
  return testEvent(
    'message',
    seq,
    { role: source === 'user' ? 'user' : 'assistant', content: [{ type: 'text', text }] },
    source,
  );
}
