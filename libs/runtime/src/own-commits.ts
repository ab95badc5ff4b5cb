import type { ConversationRef, RawMessage } from '@flotilla/log';

/**
 * The commits this process appended to conversations whose delivery it is handling, for a group
 * that is not delivered its own kind (libs/bus SELF_CONTINUING): the commit consumer hands each
 * back to the handler as if it had been delivered, before it acknowledges the commit that woke it
 * (startCommitConsumer's `ownCommits`). So whatever a group owes after its own commit is done by
 * the process that wrote it, or, if that process dies, the unacknowledged commit that woke it is
 * delivered again and decided at the conversation's tail. Appends to conversations no delivery of
 * which is being handled here are not kept.
 */
export class OwnCommits {
  /** Conversations with a delivery being handled, each with the last commit appended to it since that began. */
  readonly #watched = new Map<string, RawMessage | null>();

  /** A delivery of the conversation is being handled: note what this process appends to it. */
  watch(key: string): void {
    if (!this.#watched.has(key)) this.#watched.set(key, null);
  }

  /** The EventLog's `onAppended`. */
  appended(ref: ConversationRef, message: RawMessage): void {
    const key = `${ref.tenant}.${ref.conversation}`;
    if (!this.#watched.has(key)) return;
    const last = this.#watched.get(key);
    if (!last || last.seq < message.seq) this.#watched.set(key, message);
  }

  /** The last commit appended to the conversation since the previous take, if any. */
  take(key: string): RawMessage | undefined {
    const last = this.#watched.get(key);
    if (last) this.#watched.set(key, null);
    return last ?? undefined;
  }

  /** The delivery is handled: stop noting. */
  unwatch(key: string): void {
    this.#watched.delete(key);
  }
}
