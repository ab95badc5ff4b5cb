import type { ActionEvent, Event } from '@flotilla/events';
import { hasThinking, isResultEvent, type ResultEvent, type View, type ViewItem } from '../types.js';

/** The action a result answers, resolved the simple way (tests always set action_id). */
function answeredBy(result: ResultEvent, actions: ReadonlyMap<string, ActionEvent>): ActionEvent | undefined {
  if (result.action_id !== undefined) return actions.get(result.action_id);
  return [...actions.values()].reverse().find((action) => action.tool_call_id === result.tool_call_id);
}

/** Tool loops computed straight from the log, independently of the implementation. */
function logLoops(events: readonly Event[]): string[][] {
  const loops: string[][] = [];
  let current: string[] | undefined;
  const seenBatches = new Set<string>();
  for (const event of events) {
    const breaks =
      event.type === 'message' ||
      event.type === 'system_prompt' ||
      event.type === 'condensation' ||
      (event.type === 'agent_error' && event.action_id === undefined && event.tool_call_id === undefined);
    if (breaks) current = undefined;
    if (event.type !== 'action' || seenBatches.has(event.response_id)) continue;
    seenBatches.add(event.response_id);
    if (current !== undefined) current.push(event.response_id);
    else if (hasThinking(event)) loops.push((current = [event.response_id]));
  }
  return loops;
}

/** Every way `view` breaks the rules for the log it was built from (empty when it is sound). */
export function viewProblems(events: readonly Event[], view: View): string[] {
  const problems: string[] = [];
  const items = view.items;
  const actions = new Map(events.filter((e): e is ActionEvent => e.type === 'action').map((a) => [a.id, a]));
  const forgotten = new Set(events.flatMap((e) => (e.type === 'condensation' ? e.forgotten_event_ids : [])));
  const results = events.filter(
    (e): e is ResultEvent =>
      (e.type === 'observation' || e.type === 'agent_error' || e.type === 'user_rejection') && isResultEvent(e),
  );

  const system = events.filter((e) => e.type === 'system_prompt').at(-1);
  if (system !== undefined && items[0]?.id !== system.id) problems.push('system prompt is not first');
  if (items.slice(1).some((item) => item.type === 'system_prompt')) problems.push('system prompt after position 0');
  const ids = new Set<string>();
  for (const item of items) {
    if (ids.has(item.id)) problems.push(`item ${item.id} appears twice`);
    ids.add(item.id);
    if (forgotten.has(item.id) && item.type !== 'system_prompt')
      problems.push(`forgotten item ${item.id} is in the view`);
  }

  // (a) + (d): every batch is followed by exactly one result per call, the first one not forgotten.
  let position = 0;
  const blockOf = new Map<string, number>();
  while (position < items.length) {
    const item = items[position] as ViewItem;
    position += 1;
    if (isResultEvent(item)) problems.push(`result ${item.id} is not right after its call`);
    if (item.type !== 'action') continue;
    const batch = [item];
    while (items[position]?.type === 'action' && (items[position] as ActionEvent).response_id === item.response_id) {
      batch.push(items[position] as ActionEvent);
      position += 1;
    }
    for (const action of batch) {
      blockOf.set(action.response_id, position);
      const answer = items[position] as ViewItem | undefined;
      position += 1;
      if (answer === undefined || !isResultEvent(answer) || answeredBy(answer, actions)?.id !== action.id) {
        problems.push(`call ${action.id} is not answered in call order`);
        continue;
      }
      const first = results.find((r) => !forgotten.has(r.id) && answeredBy(r, actions)?.id === action.id);
      if (first?.id !== answer.id)
        problems.push(`call ${action.id} is answered by ${answer.id}, not the first result ${first?.id}`);
    }
  }

  // (b): a batch is whole.
  for (const key of blockOf.keys()) {
    const inLog = [...actions.values()].filter((a) => a.response_id === key).map((a) => a.id);
    const inView = items.filter((i) => i.type === 'action' && i.response_id === key).map((i) => i.id);
    if (inLog.join() !== inView.join()) problems.push(`batch ${key} is not whole`);
  }

  // (c): a tool loop is all there (save calls still unanswered in the log) or not at all, contiguous.
  const answered = new Set(results.map((r) => answeredBy(r, actions)?.id));
  for (const loop of logLoops(events)) {
    const present = loop.filter((key) => blockOf.has(key));
    if (present.length === 0) continue;
    const complete = loop.filter((key) =>
      [...actions.values()].filter((a) => a.response_id === key).every((a) => answered.has(a.id)),
    );
    if (complete.some((key) => !blockOf.has(key))) problems.push(`tool loop ${loop[0]} is cut`);
    const positions = items.flatMap((item, index) =>
      item.type === 'action' && present.includes(item.response_id) ? [index] : [],
    );
    const between = items.slice(Math.min(...positions), Math.max(...positions) + 1);
    if (between.some((item) => item.type !== 'action' && !isResultEvent(item)))
      problems.push(`tool loop ${loop[0]} is interrupted`);
  }
  return problems;
}
