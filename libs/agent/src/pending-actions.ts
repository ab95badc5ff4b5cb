import type { Event } from '@flotilla/events';
import { ConversationProgress, type PendingActions } from './progress.js';

/** The pending actions of a whole log, for a caller that keeps no `ConversationProgress`: the same fold's. */
export function pendingActions(events: readonly Event[]): PendingActions {
  return ConversationProgress.of(events).pending();
}
