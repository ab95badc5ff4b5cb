import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import type { ConversationRef } from '@flotilla/log';
import { manipulationIndices, ViewBuilder } from '@flotilla/view';
import { conversationCommits } from './conversation-fixture.js';

/**
 * The commits of `conversationCommits`, condensed as a running conversation is with the default
 * condenser settings: when the view passes `maxItems` items, the step's commit is a
 * condensation_request and the condenser's the condensation (the system prompt and the task kept,
 * everything up to about half the view forgotten, an earlier summary with it) and its usage.
 * It ends at the first step's end at or past `events` events: no action is left without its result.
 */
export function* condensedConversationCommits(
  ref: ConversationRef,
  events: number,
  maxItems = 120,
): Generator<EventDraft[]> {
  const view = new ViewBuilder();
  const system = { ...ref, source: 'system' as const };
  let written = 0;
  let condensations = 0;
  const note = (drafts: EventDraft[]): EventDraft[] => {
    // the view reads no seq: drafts stand in for the events they become
    view.append(drafts as unknown as Event[]);
    written += drafts.length;
    return drafts;
  };
  let awaitingResult = false;
  for (const drafts of conversationCommits(ref, Number.MAX_SAFE_INTEGER)) {
    // ends at the end of a step, never between an action and its result
    if (written >= events && !awaitingResult) return;
    yield note(drafts);
    if (drafts.some((draft) => draft.type === 'action')) awaitingResult = true;
    else if (drafts.some((draft) => draft.type === 'observation')) awaitingResult = false;
    const items = view.view().items;
    if (items.length <= maxItems || drafts.some((draft) => draft.type === 'action')) continue;
    yield note([draftEvent(system, 'condensation_request', { reason: `the view is too large (events)` })]);
    const indices = manipulationIndices(items);
    const start = indices.find((index) => index >= 3) ?? items.length;
    const end = indices.find((index) => index >= Math.ceil(items.length / 2)) ?? items.length;
    condensations += 1;
    yield note([
      draftEvent({ ...ref, source: 'agent' }, 'condensation', {
        forgotten_event_ids: items.slice(start, end).map((item) => item.id),
        summary: `Summary ${condensations}: ran the test files one by one; ${end - start} earlier items are summarised here.`,
        summary_offset: start,
      }),
      draftEvent(system, 'llm_usage', {
        model: 'm',
        purpose: 'condensation',
        prompt_tokens: 30_000,
        completion_tokens: 400,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        latency_ms: 4_000,
        cost_usd: 0.01,
      }),
    ]);
  }
}
