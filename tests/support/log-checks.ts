import type { Event } from '@flotilla/events';

/** Basic invariants of one conversation's events (the full auditor checks more). */
export function basicViolations(events: readonly Event[]): string[] {
  const problems: string[] = [];
  events.forEach((event, index) => {
    if (event.seq !== index + 1) problems.push(`seq ${event.seq} at position ${index + 1}`);
  });
  const ids = new Set<string>();
  for (const event of events) {
    if (ids.has(event.id)) problems.push(`duplicate event id ${event.id}`);
    ids.add(event.id);
  }
  const results = new Map<string, number>();
  for (const event of events) {
    const callId =
      event.type === 'observation' || event.type === 'user_rejection'
        ? event.tool_call_id
        : event.type === 'agent_error'
          ? event.tool_call_id
          : undefined;
    if (callId) results.set(callId, (results.get(callId) ?? 0) + 1);
  }
  for (const event of events) {
    if (event.type !== 'action') continue;
    const count = results.get(event.tool_call_id) ?? 0;
    if (count !== 1) problems.push(`action ${event.tool_call_id} has ${count} results`);
  }
  return problems;
}

/** Side-effect lines per key (`<task> <step> <index>`): every action's effect must appear at most once. */
export function effectCounts(lines: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of lines) {
    if (line.trim() === '') continue;
    counts.set(line.trim(), (counts.get(line.trim()) ?? 0) + 1);
  }
  return counts;
}
