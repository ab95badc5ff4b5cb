import type { Event, MessageEvent } from '@flotilla/events';

/** The code of the `conversation_error` that ends title generation after its last attempt failed. */
export const TITLE_FAILED = 'title_failed';

/** The `reason` of the `state_change` that sets a generated title. */
export const GENERATED_TITLE_REASON = 'generated from the first message';

/**
 * Whether a conversation is owed a generated title, decided from its log alone:
 * - `owed`: it has a user's message with text, no title was ever set (by a client, a user or a
 *   generation) and no generation ended in `title_failed`; `message` is the first such message;
 * - `no_message`: nothing is set or failed, but there is no user's text to title yet;
 * - `settled`: a title was set by anyone, or an attempt ended in failure: never again.
 *
 * Nothing here depends on which commit is being handled, nor on where appends were cut.
 */
export type TitleWork =
  | { readonly kind: 'owed'; readonly message: MessageEvent }
  | { readonly kind: 'no_message' }
  | { readonly kind: 'settled' };

/** The text of a message's text parts, joined by blank lines ('' when it has none). */
export function messageText(message: MessageEvent): string {
  return message.content
    .flatMap((part) => (part.type === 'text' ? [part.text] : []))
    .join('\n\n')
    .trim();
}

/**
 * The title decision folded event by event (a service keeps one per cached conversation and
 * extends it with each new commit). `titleWork` is the same decision over a whole log.
 */
export class TitleProgress {
  #first: MessageEvent | undefined;
  #settled = false;

  static of(events: readonly Event[]): TitleProgress {
    const progress = new TitleProgress();
    progress.append(events);
    return progress;
  }

  append(events: readonly Event[]): void {
    for (const event of events) {
      if (this.#settled) return;
      if (event.type === 'state_change' && event.title !== undefined) this.#settled = true;
      else if (event.type === 'conversation_error' && event.code === TITLE_FAILED) this.#settled = true;
      else if (
        this.#first === undefined &&
        event.type === 'message' &&
        event.role === 'user' &&
        event.source === 'user' &&
        messageText(event) !== ''
      )
        this.#first = event;
    }
  }

  work(): TitleWork {
    if (this.#settled) return SETTLED;
    return this.#first ? { kind: 'owed', message: this.#first } : NO_MESSAGE;
  }
}

const SETTLED: TitleWork = Object.freeze({ kind: 'settled' });
const NO_MESSAGE: TitleWork = Object.freeze({ kind: 'no_message' });

/** Is a title owed, from the whole log? (TitleProgress decides the same incrementally.) */
export function titleWork(events: readonly Event[]): TitleWork {
  return TitleProgress.of(events).work();
}

/**
 * True when these events (what landed after a tail a step was decided on) only title the
 * conversation: a title set with nothing else changed, what generating one cost (`llm_usage` of
 * purpose `other`), or the end of generation (`title_failed`). Nothing a step decides from moves
 * with them (its view, what the log owes, the run's status), so a step decided at that tail is
 * appended after them as it is, rather than thrown away with its model call.
 */
export function onlyTitles(events: readonly Event[]): boolean {
  return (
    events.length > 0 &&
    events.every(
      (event) =>
        (event.type === 'state_change' &&
          event.title !== undefined &&
          event.status === undefined &&
          event.tags === undefined &&
          event.settings_ref === undefined) ||
        (event.type === 'llm_usage' && event.purpose === 'other') ||
        (event.type === 'conversation_error' && event.code === TITLE_FAILED),
    )
  );
}
