import type { RewindBody } from '@flotilla/api';
import { draftEvent, type Event, type EventDraft } from '@flotilla/events';
import type { ConversationRef, EventLog } from '@flotilla/log';
import type { ConversationSnapshot } from '@flotilla/state';
import { buildView, planBranch, unmatchedActions } from '@flotilla/view';
import { ApiError } from './api-error.js';
import type { Decide } from './conversation-commands.js';

/**
 * Go on from after event `to_seq`: one commit with a `branch` event that forgets what the view
 * holds past that point, copies of what it held there and no longer does (what condensations
 * since forgot), and the status back to idle. The conversation must be at rest with no call
 * waiting (pause or interrupt a run first; approve or reject pending calls).
 */
export function decideRewind(log: EventLog, ref: ConversationRef, body: RewindBody): Decide {
  return async (state, current) => {
    if (state.status === 'running')
      throw new ApiError(409, 'conversation_running', 'The conversation is running: pause or interrupt it first.');
    if (state.pending_actions.length > 0)
      throw new ApiError(
        409,
        'conversation_running',
        'Calls wait for their results or a confirmation: approve or reject them first.',
      );
    const { events } = await log.readEvents(ref, { until: current.tail });
    checkBranchPoint(current.snapshot, events, body.to_seq, 'body.to_seq');
    if (body.to_seq === current.tail.lastSeq) return [];
    return [
      ...rewindDrafts(ref, events, body.to_seq, body.reason),
      ...(state.status === 'idle'
        ? []
        : [
            draftEvent({ ...ref, source: 'user' }, 'state_change', {
              status: 'idle',
              reason: `rewound to event ${body.to_seq}`,
            }),
          ]),
    ];
  };
}

/**
 * 400 when `seq` is past the log, 409 not_a_branch_point when a rewind left it or a call waits for
 * its result there (a branch copies answered calls only).
 */
export function checkBranchPoint(
  snapshot: ConversationSnapshot,
  events: readonly Event[],
  seq: number,
  path: string,
): void {
  const last = events.at(-1)?.seq ?? 0;
  if (seq > last)
    throw new ApiError(400, 'validation_failed', `${path}: the conversation has ${last} events`, [
      { path, message: `at most ${last}` },
    ]);
  const range = snapshot.abandoned.find((abandoned) => abandoned.first <= seq && seq <= abandoned.last);
  if (range)
    throw new ApiError(
      409,
      'not_a_branch_point',
      `${path}: event ${seq} is on a branch a rewind left (events ${range.first}–${range.last}); pick an event of the current branch`,
    );
  const waiting = unmatchedActions(events.filter((event) => event.seq <= seq));
  if (waiting.length > 0) {
    throw new ApiError(
      409,
      'not_a_branch_point',
      `${path}: after event ${seq} ${waiting.length} call(s) still wait for their results (${waiting.map((action) => action.tool_name).join(', ')}); pick a point before the call or after its result`,
    );
  }
}

/** The latest seq at or before `seq` after which no call waits for its answer (0: none). */
export function answeredPointAtOrBefore(events: readonly Event[], seq: number): number {
  let point = seq;
  for (;;) {
    const waiting = unmatchedActions(events.filter((event) => event.seq <= point));
    if (waiting.length === 0) return point;
    point = Math.min(...waiting.map((action) => action.seq)) - 1;
  }
}

/**
 * A rewind to after event `toSeq` (a checked branch point): the `branch` event forgetting what
 * the view holds past it, and the calls past it still waiting for their answers (a rollback's:
 * the view shows a call with its answer only, so they are not in it yet, and an answer arriving
 * later must not bring them back), and copies of what the view held there and no longer does.
 */
export function rewindDrafts(
  ref: ConversationRef,
  events: readonly Event[],
  toSeq: number,
  reason: string | undefined,
): EventDraft[] {
  const branch = draftEvent({ ...ref, source: 'user' }, 'branch', {
    kind: 'rewind',
    from: { conversation: ref.conversation, seq: toSeq },
    forgotten_event_ids: [],
    copied: 0,
    ...(reason !== undefined ? { reason } : {}),
  });
  const plan = planBranch(buildView(events), buildView(events.filter((event) => event.seq <= toSeq)), ref, {
    renameBatches: branch.id.slice(-12),
  });
  const waiting = unmatchedActions(events).flatMap((action) => (action.seq > toSeq ? [action.id] : []));
  const forgotten = [...new Set([...plan.forgottenEventIds, ...waiting])];
  return [{ ...branch, forgotten_event_ids: forgotten, copied: plan.copies.length }, ...plan.copies];
}
