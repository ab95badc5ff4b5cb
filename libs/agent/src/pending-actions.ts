import type { ActionEvent, Event } from '@flotilla/events';
import { ConversationProgress } from './progress.js';

/** Executable actions without a result, split by whether a runner recorded their start. */
export type PendingActions = {
  readonly notStarted: readonly ActionEvent[];
  /** Started and unanswered: running now, or cut off by a crash. */
  readonly started: readonly ActionEvent[];
  /** Runner that recorded the start of each started action. */
  readonly startedBy: ReadonlyMap<string, string>;
};

export function pendingActions(events: readonly Event[]): PendingActions {
  return ConversationProgress.of(events).pending();
}
