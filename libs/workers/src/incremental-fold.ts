import { ConversationProgress } from '@flotilla/agent';
import type { Event } from '@flotilla/events';

/**
 * A fold kept beside each conversation the cache holds (a view, what the conversation owes),
 * extended with the events the cache appended since it was last asked for, instead of rebuilt
 * from the whole history. Keyed weakly by the cache's events array itself, which only grows: a
 * reloaded conversation (a new array) starts over, and one the cache drops takes its fold along.
 */
export class IncrementalFold<T> {
  readonly #entries = new WeakMap<readonly Event[], { readonly fold: T; count: number }>();

  constructor(
    private readonly create: () => T,
    private readonly extend: (fold: T, events: readonly Event[]) => void,
  ) {}

  of(events: readonly Event[]): T {
    let entry = this.#entries.get(events);
    if (!entry || entry.count > events.length) {
      entry = { fold: this.create(), count: 0 };
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
