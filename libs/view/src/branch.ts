import { newId, protocolVersionOf, type EventDraft } from '@flotilla/events';
import type { LlmEvent, View, ViewItem } from './types.js';

/** Where a branch's events go and who writes them (the `branch` event's own context). */
export type BranchContext = {
  readonly tenant: string;
  readonly conversation: string;
  /** The wall clock by default; tests pass a fixed one. */
  readonly now?: () => Date;
};

/** What a `branch` event forgets and the copies that follow it in its commit. */
export type BranchPlan = {
  readonly forgottenEventIds: string[];
  readonly copies: EventDraft[];
};

/**
 * How a conversation whose view is `current` goes on from `target`, the view some conversation had
 * after an earlier event (`branch` event, docs/protocol.md): the items after the longest prefix the
 * two views share are forgotten, and the rest of `target` is copied, in view order, as ordinary
 * events: LLM events with fresh ids (the results' `action_id` pointing at their copied actions), a
 * summary as a condensation with nothing to forget placed where it stood. Folding the branch event
 * and then the copies gives `current`'s builder a view equal to `target` (same messages for the
 * model). A fork has no current view (`undefined`): everything is copied, the system prompt too
 * unless the child writes its own (`systemPrompt: false`, a fork with another spec).
 *
 * A rewind's copies share the log with their originals, so they get their own batch:
 * `response_id` is suffixed with `renameBatches` (the view groups a batch by it, and the forgotten
 * originals would otherwise hold the copies out of the view). Response ids never reach a provider.
 */
export function planBranch(
  current: View | undefined,
  target: View,
  context: BranchContext,
  options: { readonly systemPrompt?: boolean; readonly renameBatches?: string } = {},
): BranchPlan {
  const targetPrompt = target.items[0]?.type === 'system_prompt' ? target.items[0] : undefined;
  const targetItems = targetPrompt ? target.items.slice(1) : target.items;
  const currentHasPrompt = current?.items[0]?.type === 'system_prompt';
  const currentItems = current ? (currentHasPrompt ? current.items.slice(1) : current.items) : [];
  let shared = 0;
  while (
    shared < currentItems.length &&
    shared < targetItems.length &&
    currentItems[shared]!.id === targetItems[shared]!.id
  )
    shared += 1;

  const timestamp = (context.now?.() ?? new Date()).toISOString();
  const renamed = new Map<string, string>();
  const copies: EventDraft[] = [];
  const copyPrompt = current === undefined && targetPrompt !== undefined && options.systemPrompt !== false;
  if (copyPrompt) copies.push(copyOf(targetPrompt, context, timestamp, renamed, options.renameBatches));
  // a summary's offset indexes the view as it stands when its copy is folded (system prompt at 0)
  const shift = (current === undefined ? copyPrompt : currentHasPrompt) ? 1 : 0;
  targetItems.slice(shared).forEach((item, index) => {
    if (item.type === 'condensation_summary') {
      copies.push({
        v: protocolVersionOf({ type: 'condensation' }),
        id: newId(),
        type: 'condensation',
        tenant: context.tenant,
        conversation: context.conversation,
        source: 'system',
        timestamp,
        forgotten_event_ids: [],
        summary: item.summary,
        summary_offset: shift + shared + index,
      });
      return;
    }
    copies.push(copyOf(item, context, timestamp, renamed, options.renameBatches));
  });
  return { forgottenEventIds: currentItems.slice(shared).map((item: ViewItem) => item.id), copies };
}

/** One LLM event copied: a fresh id, this conversation's envelope, references among the copies renamed. */
function copyOf(
  event: LlmEvent,
  context: BranchContext,
  timestamp: string,
  renamed: Map<string, string>,
  renameBatches: string | undefined,
): EventDraft {
  const {
    seq: _seq,
    id,
    v: _v,
    tenant: _tenant,
    conversation: _conversation,
    timestamp: _timestamp,
    parent,
    ...payload
  } = event;
  const copy: Record<string, unknown> = { ...payload };
  if ('action_id' in copy && typeof copy['action_id'] === 'string')
    copy['action_id'] = renamed.get(copy['action_id']) ?? copy['action_id'];
  if (renameBatches !== undefined && typeof copy['response_id'] === 'string')
    copy['response_id'] = `${copy['response_id'] as string}~${renameBatches}`;
  const fresh = newId();
  renamed.set(id, fresh);
  const mappedParent = parent === undefined ? undefined : renamed.get(parent);
  return {
    ...copy,
    v: protocolVersionOf(copy as { type: string }),
    id: fresh,
    tenant: context.tenant,
    conversation: context.conversation,
    timestamp,
    ...(mappedParent === undefined ? {} : { parent: mappedParent }),
  } as EventDraft;
}
