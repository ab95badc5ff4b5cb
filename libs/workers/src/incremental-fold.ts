import { ConversationProgress } from '@flotilla/agent';
import type { Event } from '@flotilla/events';
import type { ConversationStart } from '@flotilla/runtime';

/**
 * A fold kept beside each conversation the cache holds (a view, what the conversation owes),
 * extended with the events the cache appended since it was last asked for, instead of rebuilt
 * from the whole history. Keyed weakly by the cache's events array itself, which only grows: a
 * reloaded conversation (a new array) starts over, and one the cache drops takes its fold along.
 *
 * A conversation the cache loaded from a checkpoint (`start`) is folded from the checkpoint's
 * state: `create` resumes from it, and the events before the checkpoint are not folded again.
 */
export class IncrementalFold<T, S = never> {
  readonly #entries = new WeakMap<readonly Event[], { readonly fold: T; count: number }>();

  constructor(
    private readonly create: (start?: ConversationStart<S>) => T,
    private readonly extend: (fold: T, events: readonly Event[]) => void,
  ) {}

  of(events: readonly Event[], start?: ConversationStart<S>): T {
    let entry = this.#entries.get(events);
    if (!entry || entry.count > events.length) {
      entry = { fold: this.create(start), count: start?.folded ?? 0 };
      this.#entries.set(events, entry);
    }
    if (entry.count < events.length) {
      this.extend(entry.fold, entry.count === 0 ? events : events.slice(entry.count));
      entry.count = events.length;
    }
    return entry.fold;
  }
}

/** What each cached conversation owes: a decision per delivery without rescanning the history. */
export function incrementalProgress(): IncrementalFold<ConversationProgress> {
  return new IncrementalFold(
    () => new ConversationProgress(),
    (progress, events) => progress.append(events),
  );
}
